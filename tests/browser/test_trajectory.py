"""The run page's trajectory in Chromium: selecting a failing verdict highlights the step it
cites and brings it into view; the step links back to the verdict."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from judge_engine.trajectory import flagged, normalise, tool_names
from runs.models import AgentRun, CriterionVerdict, Evaluation, RunTool, Status

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CITED = 31
HIGHLIGHTED = re.compile(r"\bis-cited\b")


def forty_steps() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An OpenAI-chat run of 40 steps: system and user turns, then 12 rounds of a tool call,
    its result and a short assistant note, then the final answer (and one error result)."""
    messages = [
        {"role": "system", "content": "You are Acme support. Look orders up before refunding."},
        {"role": "user", "content": "Please refund order 77, it arrived broken."},
    ]
    output: list[dict[str, Any]] = []
    for i in range(12):
        tool = "lookup_order" if i % 3 else "search_kb"
        call_id = f"call_{i}"
        arguments = json.dumps({"order": 77, "attempt": i})
        output.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": tool, "arguments": arguments},
                    }
                ],
            }
        )
        content = f"Order 77: status shipped, attempt {i}"
        if i == 9:  # step 2 + 9 * 3 + 2 = 31: the assistant's note after the tenth result
            content = "Refund API: 503 service unavailable"
        output.append({"role": "tool", "tool_call_id": call_id, "content": content})
        note = f"Checked ({i})." if i != 9 else "The refund API failed; I will promise it anyway."
        output.append({"role": "assistant", "content": note})
    output.append({"role": "assistant", "content": "Your refund for order 77 is done."})
    output.append({"role": "assistant", "content": "Anything else?"})
    return messages, output


def make_run(team: Any, rubric: Any) -> AgentRun:
    messages, output = forty_steps()
    steps = normalise(messages, output)
    assert len(steps) == 40 and steps[CITED]["kind"] == "message"
    run = AgentRun.objects.create(
        team=team,
        external_id="forty-steps",
        agent="support-bot",
        input={"messages": messages},
        output=output,
        steps=steps,
        flagged_steps=flagged(steps),
        task_text=messages[1]["content"],
        output_text=output[-1]["content"],
        content_hash="0" * 64,
        rubric=rubric,
        status=Status.SUCCEEDED,
        passed=False,
        score=0.0,
        current_version=rubric.current_version,
    )
    RunTool.objects.bulk_create(
        RunTool(run=run, team=team, tool=t, run_created_at=run.created_at)
        for t in tool_names(steps)
    )
    evaluation = Evaluation.objects.create(
        team=team,
        run=run,
        kind="rubric",
        rubric=rubric,
        rubric_version=rubric.current_version,
        status=Status.SUCCEEDED,
        judge_model="openai/fake-judge",
        judge_view="trajectory",
        run_token_budget=24_000,
        rendering={"view": "trajectory", "tokens": 2_210, "budget": 24_000},
        passed=False,
        score=0.0,
        reason="Failed: c1.",
        criteria_judged=2,
        is_current=True,
        finished_at=timezone.now(),
    )
    for position, criterion in enumerate(rubric.current_version.criteria.order_by("position")):
        failing = position == 0
        CriterionVerdict.objects.create(
            evaluation=evaluation,
            team=team,
            run=run,
            rubric=rubric,
            run_created_at=run.created_at,
            is_current=True,
            criterion=criterion,
            criterion_key=criterion.key,
            position=position,
            description=criterion.description,
            required=criterion.required,
            satisfied=not failing,
            reasoning="It promised the refund after the refund API failed." if failing else "Fine.",
            verdict_key=f"key-{position}",
            evidence=[CITED] if failing else [3],
        )
    return run


def test_selecting_a_failing_verdict_highlights_its_cited_step_and_scrolls_to_it(
    browser_page, sign_in, owner, team, make_rubric
):
    rubric = make_rubric(
        criteria=[
            {"description": "Never promises a refund the refund API did not confirm"},
            {"description": "Looks the order up first"},
        ]
    )
    run = make_run(team, rubric)
    page = sign_in(browser_page, owner)
    page.goto(f"/runs/{run.id}/")
    cited = page.locator(f"#step-{CITED}")
    expect(page.get_by_test_id("trajectory").locator("li.step")).to_have_count(40)
    expect(cited).not_to_be_in_viewport()

    button = page.locator("#verdict-c1").get_by_role("button", name="Show evidence")
    button.click()

    expect(cited).to_have_class(HIGHLIGHTED)
    expect(cited).to_be_in_viewport()
    expect(button).to_have_attribute("aria-pressed", "true")
    expect(page.locator(".step.is-cited")).to_have_count(1)
    expect(cited).to_contain_text("Cited by: c1")
    # The README's picture, when asked for (as tests/browser/test_screenshots.py): a test run
    # never rewrites docs/screenshots by itself.
    if shots := os.environ.get("EVALSITE_SCREENSHOTS_DIR"):
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(shots) / "run-trajectory.png"))

    page.locator("#verdict-c2 td").nth(1).click()  # selecting the row itself works too
    expect(page.locator("#step-3")).to_have_class(HIGHLIGHTED)
    expect(cited).not_to_have_class(HIGHLIGHTED)
    expect(button).to_have_attribute("aria-pressed", "false")

    cited.get_by_role("link", name="c1").click()  # the back-link
    expect(page.locator("#verdict-c1")).to_be_in_viewport()
    assert page.url.endswith("#verdict-c1")
