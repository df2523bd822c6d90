"""Which rubric judges an OTLP run; bad exports; teams kept apart; the service defaults API."""

from __future__ import annotations

import gzip
import json

import pytest

from runs.models import AgentRun, Evaluation, OtelServiceRubric, OtelSpan
from tests.api_client import assert_error, field_locs
from tests.otel.otlp import S, export_json, new_trace_id, two_tool_trace


def judged_with(run: AgentRun):
    evaluation = Evaluation.objects.filter(run=run).first()
    return evaluation.rubric if evaluation else None


def test_the_agent_span_attribute_names_the_rubric_by_slug(send, team, make_rubric):
    rubric = make_rubric()
    send(list(two_tool_trace(rubric=rubric.slug).values()))
    run = AgentRun.objects.get(team=team)
    assert run.rubric == rubric and judged_with(run) == rubric


def test_the_resource_attribute_names_the_rubric_by_id(send, team, make_rubric):
    rubric = make_rubric()
    resource = {"service.name": "support-agent", "evalsite.rubric": str(rubric.id)}
    send(list(two_tool_trace().values()), "protobuf", resource=resource)
    assert judged_with(AgentRun.objects.get(team=team)) == rubric


def test_the_service_default_judges_runs_that_name_no_rubric(send, team, make_rubric, api):
    rubric = make_rubric()
    other = make_rubric(name="Other")
    api.put("/otel/services", {"service_name": "support-agent", "rubric": rubric.slug})
    api.put("/otel/services", {"service_name": "billing", "rubric": other.slug})

    send(list(two_tool_trace().values()))
    send(list(two_tool_trace(rubric=other.slug).values()))  # the span's own wins

    runs = AgentRun.objects.filter(team=team).order_by("created_at")
    assert [judged_with(r) for r in runs] == [rubric, other]


def test_an_unknown_rubric_stores_the_run_unjudged_and_says_why(send, team):
    send(list(two_tool_trace(rubric="no-such-rubric").values()))
    run = AgentRun.objects.get(team=team)
    assert judged_with(run) is None
    assert run.metadata["evalsite.rubric_error"] == "no rubric 'no-such-rubric' in this team"


BAD = [
    (b"{not json", "application/json", "not JSON"),
    (b"[]", "application/json", "JSON object"),
    (b'{"resourceSpans": {}}', "application/json", "resourceSpans must be an array"),
    (
        json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz", "spanId": "00f067aa0ba902b7"}]}]}]}).encode(),
        "application/json",
        "resourceSpans[0].scopeSpans[0].spans[0].traceId must be 32 hex digits",
    ),
    (
        json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7", "startTimeUnixNano": "soon"}]}]}]}).encode(),
        "application/json",
        "startTimeUnixNano must be an unsigned integer",
    ),
    (b"\xff\xfe not protobuf \x00", "application/x-protobuf", "ExportTraceServiceRequest"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "content_type", "reason"), BAD)
def test_an_export_that_is_not_otlp_is_a_400_naming_the_reason(
    post_raw, team, body, content_type, reason
):
    response = post_raw(body, content_type)
    assert reason in assert_error(response, 400)["message"]
    assert not OtelSpan.objects.exists()


def test_another_content_type_is_a_415_a_bad_gzip_a_400_and_a_gzip_bomb_a_413(
    post_raw, api_key, settings
):
    settings.EVALSITE_MAX_BULK_BYTES = 1_000_000
    assert_error(post_raw(b"a=b", "application/x-www-form-urlencoded"), 415)
    from django.test import Client

    response = Client().post(
        "/api/otel/v1/traces",
        data=b"not gzip",
        content_type="application/json",
        headers={"Authorization": f"Bearer {api_key}", "Content-Encoding": "gzip"},
    )
    assert "gzip" in assert_error(response, 400)["message"]
    bomb = gzip.compress(b"{" + b" " * 5_000_000 + b"}")
    response = Client().post(
        "/api/otel/v1/traces",
        data=bomb,
        content_type="application/json",
        headers={"Authorization": f"Bearer {api_key}", "Content-Encoding": "gzip"},
    )
    assert "expands past 1,000,000 bytes" in assert_error(response, 413)["message"]


def test_a_trace_over_the_run_limit_is_a_413_and_stores_nothing(send, team, settings):
    settings.EVALSITE_MAX_RUN_BYTES = 5_000
    trace = two_tool_trace()
    trace["tool1"].attributes["gen_ai.tool.call.result"] = "x" * 6_000
    response = send(list(trace.values()))
    assert assert_error(response, 413)["extra"]["limit"] == 5_000
    assert not OtelSpan.objects.exists() and not AgentRun.objects.exists()


def test_a_trace_growing_over_the_limit_across_exports_is_refused_when_it_crosses(send, settings):
    settings.EVALSITE_MAX_RUN_BYTES = 5_000
    t = new_trace_id()
    first = S("tool", t, parent="00f067aa0ba902b7", attributes={"big": "x" * 3_000})
    second = S("tool", t, parent="00f067aa0ba902b7", attributes={"big": "y" * 3_000})
    assert send([first]).status_code == 200
    assert_error(send([second]), 413)
    assert OtelSpan.objects.count() == 1


def test_nul_and_unknown_attribute_kinds_are_stored_safely(post_raw, team):
    body = export_json(list(two_tool_trace().values()))
    span = body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["attributes"] += [
        {"key": "odd", "value": {"stringValue": "a\u0000b"}},
        {"key": "future", "value": {"someNewValue": 1}},
        {"key": "nan", "value": {"doubleValue": "NaN"}},
    ]
    assert post_raw(json.dumps(body).encode()).status_code == 200
    assert AgentRun.objects.filter(team=team).count() == 1


def test_no_key_is_a_401_and_a_viewer_session_a_403(post_raw, viewer, session_api):
    body = json.dumps(export_json(list(two_tool_trace().values()))).encode()
    assert_error(post_raw(body, key=None), 401)
    api = session_api(viewer)
    response = api.client.post("/api/otel/v1/traces", data=body, content_type="application/json")
    assert_error(response, 403)


def test_another_teams_key_never_sees_or_joins_a_trace(
    send, team, other_team, other_api_key, api, other_api
):
    trace = two_tool_trace()
    children = [trace[k] for k in ("chat1", "tool1", "chat2", "tool2", "chat3")]
    send(children)  # our team's children
    send([trace["agent"]], key=other_api_key)  # their agent span, same trace and span ids

    [theirs] = AgentRun.objects.filter(team=other_team)
    assert [s["kind"] for s in theirs.trajectory()] == ["message", "message"]  # no tool steps
    assert not AgentRun.objects.filter(team=team).exists()
    assert other_api.get("/runs").json()["items"][0]["id"] == str(theirs.id)
    assert api.get("/runs").json()["items"] == []
    assert api.get(f"/runs/{theirs.id}").status_code == 404

    send([trace["agent"]])  # ours assembles from our own spans only
    [ours] = AgentRun.objects.filter(team=team)
    assert ours.external_id == theirs.external_id and ours.pk != theirs.pk
    assert [s["kind"] for s in ours.trajectory()].count("tool_call") == 2


def test_owners_and_keys_set_service_defaults_editors_only_read_them(
    api, session_api, teammate, make_rubric, other_api, team
):
    rubric = make_rubric()
    answer = api.put("/otel/services", {"service_name": "support-agent", "rubric": rubric.slug})
    assert answer.status_code == 200
    assert answer.json() == [
        {
            "service_name": "support-agent",
            "rubric": {"id": str(rubric.id), "slug": rubric.slug, "name": rubric.name},
        }
    ]
    editor = session_api(teammate)
    assert editor.get("/otel/services").json() == answer.json()
    assert_error(editor.put("/otel/services", {"service_name": "x", "rubric": rubric.slug}), 403)
    assert other_api.get("/otel/services").json() == []
    assert field_locs(
        other_api.put("/otel/services", {"service_name": "x", "rubric": rubric.slug})
    ) == [["body", "payload", "rubric"]]
    assert field_locs(
        api.put("/otel/services", {"service_name": "x", "rubric": "nope", "extra": 1})
    )
    assert api.put("/otel/services", {"service_name": "support-agent", "rubric": None}).json() == []
    assert not OtelServiceRubric.objects.exists()


def test_an_otlp_trace_whose_rubric_is_empty_is_kept_as_nothing_to_judge(send, team, make_rubric):
    empty = make_rubric(name="Empty", criteria=[])

    send(list(two_tool_trace(rubric=empty.slug).values()))

    run = AgentRun.objects.get(team=team)
    assert run.status == "nothing_to_judge" and run.passed is None
    assert not Evaluation.objects.filter(run=run).exists()


def test_a_service_default_rubric_samples_the_runs_it_is_given(send, team, make_rubric, api):
    rubric = make_rubric(sample_rate=0)
    api.put("/otel/services", {"service_name": "support-agent", "rubric": rubric.slug})

    send(list(two_tool_trace().values()))

    run = AgentRun.objects.get(team=team)
    assert run.rubric == rubric and run.status == "not_sampled"
    assert run.sampling["reason"] == "rate" and judged_with(run) is None
