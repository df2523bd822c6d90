"""Every API path is answered by exactly one route, so the order routers are mounted in
(evalsite/api.py) cannot change which operation answers: a literal segment (/runs/export,
/runs/bulk) never also matches a sibling's parameter (/runs/{run_id})."""

from __future__ import annotations

import re

from django.urls import URLPattern, URLResolver

from evalsite.api import api

SAMPLE = "0b7c9a52-5f1e-4c3d-9a8b-2e6f4d1c7a90"


def _patterns(resolvers, prefix=""):
    for entry in resolvers:
        if isinstance(entry, URLResolver):
            yield from _patterns(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield entry


def routes_matching(path: str, patterns: list[URLPattern]) -> list[str]:
    """The distinct route patterns (relative to /api/) that match ``path`` (ninja registers a
    route once per group of methods; the same route twice is one route)."""
    return list(dict.fromkeys(str(p.pattern) for p in patterns if p.pattern.match(path)))


def concrete(openapi_path: str) -> str:
    """An OpenAPI path with a sample value for each parameter, relative to /api/."""
    return re.sub(r"\{[^}]+\}", SAMPLE, openapi_path.removeprefix("/api/"))


def test_every_api_path_is_answered_by_exactly_one_route():
    patterns = list(_patterns(api.urls[0]))
    paths = api.get_openapi_schema()["paths"]
    assert "/api/runs/export" in paths and "/api/runs/{run_id}" in paths
    ambiguous = {
        path: routes
        for path in paths
        if len(routes := routes_matching(concrete(path), patterns)) != 1
    }
    assert ambiguous == {}


def test_a_literal_shadowed_by_a_parameter_would_be_reported():
    from django.urls import path as route

    patterns = [route("runs/<run_id>", lambda r: None), route("runs/export", lambda r: None)]
    assert routes_matching("runs/export", patterns) == ["runs/<run_id>", "runs/export"]
