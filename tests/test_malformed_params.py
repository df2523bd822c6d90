"""No malformed parameter makes any page or API list answer 500.

Every URL pattern of the site (and every GET of the API) is requested by a signed-in owner with
real objects in its path, then with malformed query parameters: garbage cursors, non-UUID ids,
negative and huge numbers, NUL bytes, over-long text. Every HTML form view is posted the same
garbage. Anything but a 500 is acceptable here (the specific answers are tested per page).

Each parameter is also sent alone, the bad values taking turns, to each view that reads it. A
request with one parameter set is the request without it until the view first reads that
parameter, so a view that never reads it without parameters (nor with all of them) never reads
it alone either: the reads are recorded (``reads``), and a view that walks the whole query
(``keys()``, ``dict()``, as django-ninja does) is sent every parameter alone.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils.datastructures import MultiValueDict

from judging.services.rescore import batch_create
from teams.services import api_key_create
from tests.page_helpers import judged_run

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

BAD = [
    "%%%",
    "not-a-uuid",
    "-1",
    "99999999999999999999999999999999",
    "1e309",
    "nan",
    "\x00",
    "a\x00b",
    "x" * 5000,
    "2026-13-45T99:99",
    "[]",
    "'; --",
    "//evil.example/",
]
PARAMS = [
    "cursor", "rubric", "version", "run", "evaluation", "a", "b", "page", "partial", "focus",
    "passed", "failing_criterion", "status", "agent", "since", "until", "q", "sort", "limit",
    "criterion", "team", "next", "kind", "perspective", "judge", "sample", "repeats",
    "include_archived", "score", "satisfied", "dimension", "golden", "op", "note", "try_run",
    "runs", "scope", "confirm", "force", "name", "import_text", "criteria_text", "description",
]  # fmt: skip
SKIP = re.compile(r"^(admin/|accounts/(password|reset)|api/docs|api/openapi)")


def routes(resolver: Any = None, prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    for pattern in (resolver or get_resolver()).url_patterns:
        if isinstance(pattern, URLResolver):
            yield from routes(pattern, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern), pattern


def fill(route: str, values: dict[str, str]) -> str:
    """The route with each <converter:name> / <name> replaced by values[name]."""
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: values.get(m.group(1), "x"), route)


@pytest.fixture
def world(owner, team, make_rubric, make_run, fake_judge) -> dict[str, str]:
    rubric = make_rubric()
    run = judged_run(make_run, rubric=rubric.slug, external_id="sweep-1")
    batch, _ = batch_create(team=team, rubric=rubric)
    key, _ = api_key_create(team=team, name="sweep")
    evaluation = run.evaluations.first()
    return {
        "rubric_id": str(rubric.id),
        "rubric": rubric.slug,
        "run_id": str(run.id),
        "batch_id": str(batch.id),
        "key_id": str(key.id),
        "evaluation_id": str(evaluation.id),
        "calibration_id": str(uuid.uuid4()),
        "override_id": str(uuid.uuid4()),
        "connection": str(uuid.uuid4()),
        "number": "1",
        "key": "c1",
        "fmt": "csv",
    }


def client_for(owner) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(owner)
    return client


EVERY = "*"  # the view walked the whole query: every parameter may matter
KEYED = ("__getitem__", "get", "getlist", "__contains__", "pop", "setdefault")
WHOLE = ("keys", "items", "lists", "values", "dict", "__iter__", "__len__", "copy", "urlencode")


@contextmanager
def reads() -> Iterator[set[str]]:
    """The parameter names any query or form dict was asked for meanwhile (EVERY: walked)."""
    seen: set[str] = set()

    def keyed(method: Callable) -> Callable:
        def read(self: Any, key: Any, *args: Any, **kwargs: Any) -> Any:
            seen.add(str(key))
            return method(self, key, *args, **kwargs)

        return read

    def whole(method: Callable) -> Callable:
        def read(self: Any, *args: Any, **kwargs: Any) -> Any:
            seen.add(EVERY)
            return method(self, *args, **kwargs)

        return read

    classes = (MultiValueDict, *MultiValueDict.__subclasses__())
    saved = [
        (cls, n, cls.__dict__[n]) for cls in classes for n in KEYED + WHOLE if n in cls.__dict__
    ]
    for cls, n, method in saved:
        setattr(cls, n, keyed(method) if n in KEYED else whole(method))
    for n in KEYED + WHOLE:  # dict's own methods MultiValueDict does not override
        if n not in MultiValueDict.__dict__ and hasattr(dict, n):
            method = getattr(dict, n)
            setattr(MultiValueDict, n, keyed(method) if n in KEYED else whole(method))
            saved.append((MultiValueDict, n, None))
    try:
        yield seen
    finally:
        for cls, n, method in saved:
            if method is None:
                delattr(cls, n)
            else:
                setattr(cls, n, method)


def sweep(send: Callable[[dict[str, str]], int]) -> list[tuple[dict[str, str], int]]:
    """Send the query sets; (params, status) of each answer. Without parameters and with all
    of them at once first, recording which the view reads; then each it reads alone."""
    answers = []
    with reads() as seen:
        for params in [{}] + [dict.fromkeys(PARAMS, value) for value in BAD]:
            answers.append((params, send(params)))
    alone = PARAMS if EVERY in seen else [p for p in PARAMS if p in seen]
    for name in alone:  # each alone, the bad values taking turns
        params = {name: BAD[PARAMS.index(name) % len(BAD)]}
        answers.append((params, send(params)))
    return answers


def test_the_reads_are_recorded_for_forms_queries_and_whole_walks():
    from django.http import QueryDict

    query, get = QueryDict("a=1&b=2&c=3"), MultiValueDict.get
    with reads() as seen:
        query.get("a"), query.getlist("b"), "zz" in query  # noqa: B018
    assert seen == {"a", "b", "zz"}
    with reads() as seen:
        list(query.keys())
    assert seen == {EVERY}
    with reads() as seen:
        pass
    assert seen == set() and query.get("a") == "1"
    assert MultiValueDict.get is get and "__contains__" not in MultiValueDict.__dict__


# Each sweep is split into shards of the site's routes (every route in exactly one), so the
# shards run side by side under pytest-xdist; together they request the same URLs.
SHARDS = 6


def urls(world: dict[str, str], shard: int) -> list[str]:
    swept = [route for route, _ in routes() if not SKIP.match(route)]
    return [fill(route, world) for route in swept[shard::SHARDS]]


def malformed_paths(world: dict[str, str], shard: int) -> list[str]:
    """API routes with malformed path parameters (plain strings the operation checks; the
    site's own routes use <uuid:…>, which a malformed value does not match at all)."""
    swept = [route for route, _ in routes() if not SKIP.match(route)]
    return [
        fill(route, dict.fromkeys(world, bad))
        for route in swept[shard::SHARDS]
        if route.startswith("api/") and "<" in route
        for bad in ("not-a-uuid", "-1", "99999999999999999999", "%00")
    ]


def described(url: str, params: dict[str, str], status: int) -> tuple[str, str, int]:
    what = f"{next(iter(params))}={params[next(iter(params))][:20]!r}" if params else "-"
    return (url, what if len(params) <= 1 else f"all={next(iter(params.values()))[:20]!r}", status)


def test_the_shards_together_sweep_every_route_once():
    swept = [route for route, _ in routes() if not SKIP.match(route)]
    world = dict.fromkeys(["run_id"], "x")
    sharded = [url for shard in range(SHARDS) for url in urls(world, shard)]
    assert sorted(sharded) == sorted(fill(route, world) for route in swept)
    assert len(swept) > 100  # the resolver was walked, not an empty list


@pytest.mark.parametrize("shard", range(SHARDS))
def test_no_get_with_malformed_parameters_answers_500(owner, world, shard):
    client = client_for(owner)
    failures = []
    for url in urls(world, shard):
        for params, status in sweep(lambda params: client.get(url, params).status_code):
            if status >= 500:
                failures.append(described(url, params, status))
    for url in malformed_paths(world, shard):
        response = client.get(url)
        if response.status_code >= 500:
            failures.append(described(url, {}, response.status_code))
    assert failures == [], "\n".join(map(repr, failures))


@pytest.mark.parametrize("shard", range(SHARDS))
def test_no_form_post_with_malformed_fields_answers_500(owner, world, shard):
    client = client_for(owner)
    failures = []
    for url in urls(world, shard):
        if url.startswith("/api/") or url.startswith("/accounts/logout"):
            continue
        for params, status in sweep(lambda params: client.post(url, params).status_code):
            if status >= 500:
                failures.append(described(url, params, status))
        client.force_login(owner)  # a post may have switched the team or signed out
    assert failures == [], "\n".join(map(repr, failures))
