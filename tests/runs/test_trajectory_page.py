"""The run page's trajectory timeline, the verdicts' evidence, what the judge's rendering cut,
the failed-criteria walk's cited steps, and the runs list's tool filter (page and API).

Runs come in through the real ingest (OpenAI chat, Anthropic and unknown parts mixed); the
verdicts' evidence and the evaluation's rendering are set on the stored rows, as the worker
stores them, so each test states exactly what it shows."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse
from django.utils.html import escape

from runs.models import AgentRun, CriterionVerdict, Evaluation, RunTool
from tests.api_client import field_locs
from tests.page_helpers import XSS, judged_run, queries_for, signed_in

pytestmark = pytest.mark.django_db

LONG = "\n".join(f"line {i}: {'x' * 40}" for i in range(40))


def call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
        ],
    }


def result(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


INPUT = {
    "messages": [
        {"role": "system", "content": "You are Acme support."},
        {"role": "user", "content": "Where is my refund for order 1234?"},
    ]
}
OUTPUT: list[Any] = [
    call("call_1", "lookup_order", {"order": 1234, "note": XSS}),  # 2
    result("call_1", f"Order 1234: shipped {XSS}"),  # 3
    call("call_2", "refund", "{not json"),  # 4
    result("call_9", "a result nobody asked for"),  # 5
    result("call_2", LONG),  # 6
    {  # 7: Anthropic tool use, 8: its error result
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "tu_1", "name": "charge", "input": {"n": 1}}],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "tu_1",
                "content": "card declined",
                "is_error": True,
            }
        ],
    },
    {"role": "assistant", "content": [{"type": "image", "source": {"data": "<b>bold</b>"}}]},  # 9
    "Your refund for order number 1234 was sent today, thanks for waiting.",  # 10
]


@pytest.fixture
def rubric(make_rubric):
    return make_rubric()


@pytest.fixture
def tool_run(make_run, rubric, fake_judge) -> AgentRun:
    return judged_run(make_run, rubric=rubric.slug, input=INPUT, output=OUTPUT, external_id="t1")


def step_html(page: str, index: int) -> str:
    """The markup of one step of the timeline."""
    return page.split(f'<li id="step-{index}"')[1].split("<li id=")[0]


def verdict_html(page: str, key: str) -> str:
    return page.split(f'<tr id="verdict-{key}"')[1].split("</tr>")[0]


def run_page(user: Any, run: AgentRun) -> str:
    response = signed_in(user).get(reverse("run_detail", args=[run.id]))
    assert response.status_code == 200
    return response.content.decode()


# --- The timeline ----------------------------------------------------------------------------------


def test_every_step_is_shown_in_order_with_its_index_and_input_apart_from_output(owner, tool_run):
    page = run_page(owner, tool_run)

    steps = tool_run.trajectory()
    assert len(steps) == 11
    positions = [page.index(f'<li id="step-{s["index"]}"') for s in steps]
    assert positions == sorted(positions)
    assert page.count('class="timeline-divider"') == 1
    assert positions[1] < page.index('class="timeline-divider"') < positions[2]
    assert ">#0<" in page and ">#10<" in page


def test_tool_arguments_and_results_with_html_in_them_show_as_text(owner, tool_run):
    page = run_page(owner, tool_run)

    lookup, its_result = step_html(page, 2), step_html(page, 3)
    assert XSS not in page
    assert "lookup_order" in lookup and "call_1" in lookup
    assert escape(f'"note": "{XSS}",\n  "order": 1234') in lookup  # pretty-printed JSON
    assert "<pre>" in lookup
    assert "Order 1234: shipped &lt;script&gt;" in its_result


def test_a_long_result_is_collapsed_and_a_short_one_is_not(owner, tool_run):
    page = run_page(owner, tool_run)

    long_one, short_one = step_html(page, 6), step_html(page, 3)
    assert '<details class="step-long">' in long_one and "40 lines" in long_one
    assert "line 39:" in long_one  # all of it, behind the disclosure
    assert "<details" not in short_one


def test_flags_and_errors_are_shown_in_words(owner, tool_run):
    page = run_page(owner, tool_run)

    assert "arguments are not JSON" in step_html(page, 4) and "{not json" in step_html(page, 4)
    assert "no call matches this result" in step_html(page, 5)
    charge_result = step_html(page, 8)
    assert "✗ error" in charge_result and "card declined" in charge_result
    assert "charge" in charge_result  # the matched call's tool name
    assert "✗ error" not in step_html(page, 3) and "step-error" not in step_html(page, 3)


def test_an_unknown_part_is_shown_whole_as_json(owner, tool_run):
    page = run_page(owner, tool_run)

    unknown = step_html(page, 9)
    assert "Unknown part" in unknown
    assert escape('"type": "image"') in unknown and "&lt;b&gt;bold&lt;/b&gt;" in unknown


def test_a_run_stored_before_steps_existed_shows_its_trajectory_from_its_messages(owner, tool_run):
    AgentRun.objects.filter(pk=tool_run.pk).update(steps=[])

    page = run_page(owner, tool_run)

    assert "lookup_order" in step_html(page, 2) and 'id="step-10"' in page


# --- Evidence --------------------------------------------------------------------------------------


def cite(run: AgentRun, key: str, evidence: list[int], note: str = "") -> None:
    CriterionVerdict.objects.filter(run=run, criterion_key=key, is_current=True).update(
        evidence=evidence, evidence_note=note
    )


def test_a_verdict_links_the_steps_it_cites_and_each_step_links_back(owner, tool_run):
    cite(tool_run, "c1", [2, 3])
    cite(tool_run, "c2", [3], note="step 40 is not in this run: dropped")

    page = run_page(owner, tool_run)

    c1 = verdict_html(page, "c1")
    assert 'data-evidence="2 3"' in c1
    assert 'href="#step-2"' in c1 and 'href="#step-3"' in c1
    assert 'aria-pressed="false"' in c1 and "Show evidence" in c1
    assert "step 40 is not in this run: dropped" in verdict_html(page, "c2")
    backlinks = step_html(page, 3).split("Cited by:")[1]
    assert 'href="#verdict-c1"' in backlinks and 'href="#verdict-c2"' in backlinks
    assert "Mentions" in backlinks and "Cited by" not in step_html(page, 4)
    assert "data-evidence" not in verdict_html(page, "c3")


# --- What the judge saw ----------------------------------------------------------------------------


def test_what_the_rendering_cut_is_said_exactly_with_the_token_figures(owner, tool_run):
    Evaluation.objects.filter(run=tool_run, kind="rubric").update(
        judge_view="trajectory",
        rendering={
            "view": "trajectory",
            "tokens": 23_512,
            "budget": 24_000,
            "elided": [{"from": 12, "to": 87, "steps": 76, "tool_calls": 41}],
            "shortened": [5, 9],
        },
    )

    page = run_page(owner, tool_run)

    saw = page.split('data-testid="judge-view"')[1].split("</div>")[0]
    assert "Trajectory (every turn and tool call with its result)" in saw
    assert "23,512 of 24,000 tokens" in saw
    assert "steps 12–87 elided: 76 steps, 41 tool calls" in saw
    assert "tool results of steps 5, 9 shortened" in saw


def test_a_rendering_that_cut_nothing_says_so(owner, tool_run):
    Evaluation.objects.filter(run=tool_run, kind="rubric").update(
        judge_view="conversation", rendering={}
    )

    saw = run_page(owner, tool_run).split('data-testid="judge-view"')[1].split("</div>")[0]

    assert "Conversation (every user and assistant turn)" in saw and "Nothing was cut" in saw


# --- The failed-criteria walk ---------------------------------------------------------------------


def test_the_walk_shows_the_failing_verdicts_cited_steps_inline(
    owner, rubric, make_run, fake_judge
):
    runs = [
        judged_run(make_run, rubric=rubric.slug, input=INPUT, output=OUTPUT[:-1] + ["Sorry."])
        for _ in range(2)
    ]
    cite(runs[1], "c1", [4, 8], note="")
    client = signed_in(owner)
    url = reverse("failures_walk", args=[rubric.id, "c1"])

    page = client.get(url, {"version": 1, "run": str(runs[1].id)}).content.decode()
    without = queries_for(client, f"{url}?version=1&run={runs[0].id}")
    with_evidence = queries_for(client, f"{url}?version=1&run={runs[1].id}")

    evidence = page.split('data-testid="walk-evidence"')[1]
    assert 'id="step-4"' in evidence and 'id="step-8"' in evidence
    assert 'id="step-3"' not in evidence and "card declined" in evidence
    assert f'href="/runs/{runs[1].id}/#step-4"' in evidence
    assert with_evidence == without


# --- Scoping and cost ------------------------------------------------------------------------------


def test_another_teams_run_page_is_not_found(stranger, tool_run):
    response = signed_in(stranger).get(reverse("run_detail", args=[tool_run.id]))
    assert response.status_code == 404


def test_a_500_step_run_page_runs_the_same_queries_as_a_short_one(
    owner, rubric, make_run, fake_judge
):
    short = judged_run(make_run, rubric=rubric.slug, input=INPUT, output=OUTPUT)
    long_output: list[Any] = []
    for i in range(166):
        long_output += [call(f"c{i}", "lookup_order", {"page": i}), result(f"c{i}", f"page {i}")]
        long_output.append({"role": "assistant", "content": f"Checked page **{i}**."})
    long = judged_run(make_run, rubric=rubric.slug, input=INPUT, output=long_output)
    assert len(long.trajectory()) == 500
    cite(long, "c1", [17, 499])
    client = signed_in(owner)

    assert queries_for(client, reverse("run_detail", args=[long.id])) == queries_for(
        client, reverse("run_detail", args=[short.id])
    )


# --- The tool filter ------------------------------------------------------------------------------


@pytest.fixture
def tool_runs(make_run) -> dict[str, AgentRun]:
    """Three runs: one calls refund twice, one calls lookup_order, one calls nothing."""
    return {
        "refunds": make_run(
            external_id="refunds",
            input=INPUT,
            output=[call("a", "refund", {}), result("a", "ok"), call("b", "refund", {}), "Done."],
        ),
        "lookups": make_run(
            external_id="lookups", input=INPUT, output=[call("a", "lookup_order", {}), "Done."]
        ),
        "talks": make_run(external_id="talks", input=INPUT, output="Done."),
    }


def test_ingest_records_each_tool_a_run_called_once(tool_runs):
    rows = RunTool.objects.filter(run=tool_runs["refunds"])
    assert [(r.tool, r.calls) for r in rows] == [("refund", 2)]


def test_the_runs_list_filters_by_a_called_tool_and_offers_the_teams_tools(owner, tool_runs):
    response = signed_in(owner).get(reverse("run_list"), {"tool": "refund"})

    assert [r.external_id for r in response.context["runs"]] == ["refunds"]
    assert response.context["tools"] == ["lookup_order", "refund"]
    page = response.content.decode()
    assert 'name="tool"' in page and '<option value="lookup_order">' in page


def test_the_api_filters_by_a_called_tool_and_pages_on_the_keyset(api, make_run):
    made = [
        make_run(external_id=f"r{i}", input=INPUT, output=[call("a", "refund", {}), "Done."])
        for i in range(5)
    ]
    make_run(external_id="other", input=INPUT, output="Done.")

    seen, cursor = [], None
    for _ in range(5):
        params = {"tool": "refund", "limit": 2} | ({"cursor": cursor} if cursor else {})
        body = api.get("/runs", **params).json()
        seen += [item["external_id"] for item in body["items"]]
        cursor = body["next_cursor"]
        if not cursor:
            break

    assert seen == [r.external_id for r in reversed(made)]


def test_a_tool_filter_that_is_too_long_is_a_422_naming_it(api):
    assert ["query", "tool"] in field_locs(api.get("/runs", tool="x" * 201))


def test_another_teams_tools_are_neither_listed_nor_offered(
    stranger, other_api, tool_runs, make_run, other_team
):
    make_run(team=other_team, input=INPUT, output=[call("z", "secret_tool", {}), "Done."])

    response = signed_in(stranger).get(reverse("run_list"), {"tool": "refund"})

    assert list(response.context["runs"]) == []
    assert response.context["tools"] == ["secret_tool"]
    assert other_api.get("/runs", tool="refund").json()["items"] == []
