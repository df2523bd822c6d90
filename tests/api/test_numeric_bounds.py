"""Every number the API accepts is bounded: out-of-range values are a 4xx naming the field.

The fields are read from the OpenAPI document (every ``integer`` and ``number`` property of
every request body, however deep, and every numeric query and path parameter), so a field
added later is covered without touching this test. Each gets values no database column
holds (PostgreSQL ``bigint`` tops out at 2**63 - 1) and numbers JSON cannot carry.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from evalsite.api import api as ninja_api
from tests.api_client import Api

pytestmark = pytest.mark.django_db

HUGE = [10**30, -(10**30), 1e30, -1e30, 2**63, -(2**63) - 1, 2**64]
# Not JSON, but what a client may send anyway: never a 500 either (our parser answers 400).
NOT_JSON = ["NaN", "-Infinity", "1e999", "-1e999"]
SCHEMA = ninja_api.get_openapi_schema()
COMPONENTS = SCHEMA["components"]["schemas"]


# One branch per JSON Schema keyword it walks: a flat list is clearer than a table here.
def numeric_paths(schema: dict[str, Any], seen: frozenset[str] = frozenset()) -> Iterator[list]:  # noqa: C901
    """The path (names, 0 for an array item, "x" for a map value) to every number in schema."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name not in seen:
            yield from numeric_paths(COMPONENTS[name], seen | {name})
        return
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key, []):
            yield from numeric_paths(sub, seen)
    if schema.get("type") in ("integer", "number"):
        yield []
    for name, sub in schema.get("properties", {}).items():
        for path in numeric_paths(sub, seen):
            yield [name, *path]
    if isinstance(schema.get("items"), dict):
        for path in numeric_paths(schema["items"], seen):
            yield [0, *path]
    if isinstance(schema.get("additionalProperties"), dict):
        for path in numeric_paths(schema["additionalProperties"], seen):
            yield ["x", *path]


def body_fields() -> list[tuple[str, str, tuple]]:
    found = set()
    for url, operations in SCHEMA["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            for media in content.values():
                for path in numeric_paths(media["schema"]):
                    found.add((method, url, tuple(path)))
    return sorted(found, key=repr)


def param_fields() -> list[tuple[str, str, str, str]]:
    found = []
    for url, operations in SCHEMA["paths"].items():
        for method, operation in operations.items():
            for param in operation.get("parameters", []):
                if any(True for _ in numeric_paths(param.get("schema", {}))):
                    found.append((method, url, param["in"], param["name"]))
    return found


def nest(path: tuple, value: Any) -> Any:
    for part in reversed(path):
        value = [value] if part == 0 else {part: value}
    return value


def concrete(url: str, **values: str) -> str:
    """The API path (without /api) with every {param} filled in with a valid value."""
    for operation in SCHEMA["paths"][url].values():
        for param in operation.get("parameters", []):
            kind = param.get("schema", {})
            valid = "1" if kind.get("type") == "integer" else str(uuid.uuid4())
            values.setdefault(param["name"], valid)
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], url).removeprefix("/api")


def names_field(response, location: str, path: tuple) -> bool:
    """Whether one of the 422's errors is about the field at path (union branches and
    ninja's body parameter name may sit between the names)."""
    if response.status_code != 422:
        return False
    wanted = [p for p in path if isinstance(p, str) and p != "x"]
    for error in response.json()["detail"]:
        loc = [p for p in error["loc"] if isinstance(p, str)]
        if loc[:1] == [location] and _subsequence(wanted, loc[1:]) and loc[-1] == wanted[-1]:
            return True
    return False


def _subsequence(wanted: list[str], loc: list[str]) -> bool:
    it = iter(loc)
    return all(part in it for part in wanted)


def test_the_api_has_numeric_inputs_to_fuzz():
    fields = {(m, u, p) for m, u, p in body_fields()}
    assert ("put", "/api/team/budget", ("daily_tokens",)) in fields
    assert ("patch", "/api/team/settings", ("confirm_tokens_above",)) in fields
    assert len(fields) >= 30


@pytest.mark.parametrize(("method", "url", "path"), body_fields(), ids=repr)
def test_an_out_of_range_number_in_a_body_is_a_4xx_naming_the_field(api_key, method, url, path):
    client = Api(api_key)
    problems = []
    for value in HUGE:
        response = client.send(method.upper(), concrete(url), nest(path, value))
        if not names_field(response, "body", path):
            problems.append((value, response.status_code, response.content[:300]))
    for text in NOT_JSON:
        raw = json.dumps(nest(path, "@")).replace('"@"', text)
        response = client.send(method.upper(), concrete(url), raw=raw)
        if not 400 <= response.status_code < 500:
            problems.append((text, response.status_code, response.content[:300]))
    assert problems == []


@pytest.mark.parametrize(("method", "url", "where", "name"), param_fields(), ids=repr)
def test_an_out_of_range_number_in_a_parameter_is_a_422_naming_it(
    api_key, method, url, where, name
):
    client = Api(api_key)
    problems = []
    for value in [10**30, -(10**30), 2**63, "1e30", "NaN"]:
        if where == "path":
            target = f"/api{concrete(url, **{name: str(value)})}"
        else:
            target = f"/api{concrete(url)}?{name}={value}"
        response = client.client.generic(
            method.upper(), target, "{}", "application/json", headers=client.headers
        )
        if not names_field(response, where, (name,)):
            problems.append((value, response.status_code, response.content[:300]))
    assert problems == []
