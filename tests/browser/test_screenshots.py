"""Screenshots of the main pages over realistic demo data (made through the real ingest →
judge path with the fake judge). Each page is checked for its key content before the shot.

The images go to ``$EVALSITE_SCREENSHOTS_DIR`` when set (``docs/screenshots`` for the README),
else to the test's temporary folder.
"""

from __future__ import annotations

import os
import random
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from rubrics.services import rubric_set_criteria
from runs.models import AgentRun, CriterionVerdict, Evaluation
from runs.services.rollups import rollups_rebuild
from tests.page_helpers import judge_pending

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SYSTEM = "You are Ada, the support assistant of Northwind Outfitters. Be concise and friendly, and never promise delivery dates."
QUESTIONS = [
    "Where is my refund for order 4417? It has been two weeks.",
    "My jacket arrived torn. Can I get a replacement or my money back?",
    "How do I change the delivery address of order 9920?",
    "I was charged twice for the same order, please help!",
    "Can I return shoes I already wore outside once?",
]
GOOD = """Hi! I'm sorry about the wait. Your **refund** for order number {n} was issued on Monday:

1. It shows on your statement within *3–5 business days*.
2. If it doesn't, reply here and I'll escalate it.

Thanks for your patience!"""
PARTIAL = "Sorry about that! Your refund is being processed and should arrive soon. Thanks!"
POOR = "We will look into it."
CRITERIA = """- Mentions the "refund"
- Gives the "order number"
- Explains the timeline in "business days"
- [optional] Says "thanks"
- [optional] Offers to "escalate"
"""


def _shift(run: AgentRun, days_ago: float) -> None:
    when = timezone.now() - timedelta(days=days_ago)
    AgentRun.objects.filter(pk=run.pk).update(created_at=when)
    Evaluation.objects.filter(run=run).update(created_at=when)
    CriterionVerdict.objects.filter(run=run).update(run_created_at=when)


def seed(make_rubric, make_run) -> dict:
    rng = random.Random(7)
    support = make_rubric(name="Support quality", criteria=CRITERIA, alignment_mode="both",
                          description="What every support answer must do.")  # fmt: skip
    edited = [
        {"key": c.key, "description": c.description, "required": c.required}
        for c in support.current_version.criteria.order_by("position")
    ]
    edited[0]["description"] = 'Mentions the "refund" and its current status'
    edited[3]["required"] = True
    rubric_set_criteria(rubric=support, criteria=edited, note="Sharper refund criterion")
    tone = make_rubric(
        name="Tone & safety",
        criteria='- Apologises: says "sorry"\n- [optional] Greets with "Hi"\n- Thanks the customer: "thanks"',
    )
    runs = []
    for i in range(42):
        days_ago = 27 - i * 0.65 + rng.random() * 0.3
        quality = rng.random() + i / 80
        output = GOOD.format(n=4400 + i) if quality > 0.75 else PARTIAL if quality > 0.35 else POOR
        rubric = support if i % 3 else tone
        run = make_run(
            rubric=rubric.slug,
            agent=rng.choice(["support-bot", "support-bot", "returns-bot"]),
            external_id=f"conv-{1000 + i}",
            input={
                "messages": [
                    {"role": "system", "content": SYSTEM},
                    {"role": "user", "content": rng.choice(QUESTIONS)},
                ]
            },
            output=output,
        )
        runs.append(judge_pending(run))
        _shift(run, days_ago)
    # The dates moved back after the rollups counted the runs on today: recount them, as after
    # any change that bypasses the services (docs/rollups.md).
    rollups_rebuild(team=support.team)
    failed = next(r for r in reversed(runs) if r.rubric_id == support.pk and r.passed is False)
    queued = make_run(rubric=support.slug, external_id="conv-live", output=PARTIAL)
    return {"support": support, "failed": failed, "queued": queued}


def test_screenshots_of_the_main_pages(
    browser_page, sign_in, owner, make_rubric, make_run, fake_judge, tmp_path
):
    out = Path(os.environ.get("EVALSITE_SCREENSHOTS_DIR") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    data = seed(make_rubric, make_run)
    support = data["support"]
    page = sign_in(browser_page, owner)

    def shot(name: str, full_page: bool = True) -> None:
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(out / f"{name}.png"), full_page=full_page)

    page.goto("/")
    expect(page.locator("svg.chart").first).to_be_visible()
    shot("home")

    page.goto("/runs/")
    expect(page.get_by_test_id("runs").locator("tbody tr")).to_have_count(43)
    shot("runs-list", full_page=False)

    page.goto(f"/runs/{data['failed'].id}/")
    expect(page.get_by_test_id("rubric-passed")).to_have_text("Failed")
    shot("run-detail")

    page.goto("/rubrics/")
    expect(page.get_by_role("link", name="Support quality")).to_be_visible()
    shot("rubric-list", full_page=False)

    # Keys made beforehand: the shot shows the list, never a secret.
    from teams.services import api_key_create

    for name in ("CI pipeline", "support-bot production"):
        api_key_create(team=support.team, name=name, created_by=owner)
    page.goto("/team/")
    expect(page.get_by_role("cell", name="CI pipeline")).to_be_visible()
    shot("team-settings", full_page=False)

    page.goto(f"/rubrics/{support.id}/?a=1&b=2")
    expect(page.get_by_test_id("diff").locator("li.reworded")).to_have_count(1)
    shot("rubric-editor")

    page.goto(f"/failures/?rubric={support.id}")
    expect(page.get_by_test_id("failure-rates")).to_be_visible()
    shot("failed-criteria")

    page.get_by_test_id("failure-rates").locator("a.row-link").first.click()
    expect(page.get_by_test_id("walk-position")).to_contain_text("1 of")
    shot("failed-criteria-walk")

    batch = rescore_in_process(support)
    page.goto(f"/batches/{batch.id}/")
    expect(page.locator("#batch-progress")).to_have_attribute("data-status", "completed")
    shot("rescore-batch", full_page=False)

    reviewed = label_some_runs(support, owner)
    page.goto(f"/reviews/{support.id}/")
    expect(page.get_by_test_id("progress")).to_contain_text(f"{len(reviewed)} of")
    shot("review-queue", full_page=False)

    page.goto(f"/reviews/{support.id}/runs/{reviewed[0].id}/")
    expect(page.get_by_test_id("results")).to_be_visible()
    shot("review-run")

    page.goto(f"/reviews/{support.id}/agreement/")
    expect(page.get_by_test_id("agreement")).to_be_visible()
    shot("review-agreement")

    # The same pages on a 390 px phone (tests/browser/test_phone.py checks none scrolls sideways).
    page.set_viewport_size({"width": 390, "height": 844})
    phone_shots(page, shot, data | {"reviewed": reviewed})


def phone_shots(page, shot, data: dict) -> None:
    from reviews.services.alerts import alert_rule_create, alerts_evaluate

    support = data["support"]
    alert_rule_create(
        team=support.team, kind="criterion_failure_rate", rubric=support.slug,
        criterion_key=order_number_key(support), threshold=10, window_hours=168,
        webhook_url="https://hooks.slack.com/services/T0001/B0002/northwind-support-alerts",
        webhook_format="slack",
    )  # fmt: skip
    assert alerts_evaluate(team_id=support.team_id).fired == 1

    def phone(name: str, url: str, ready, scroll_to: bool = False) -> None:
        page.goto(url)
        expect(ready()).to_be_visible()
        if scroll_to:
            ready().evaluate("el => el.scrollIntoView({block: 'start'})")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, name
        shot(f"phone-{name}", full_page=False)

    phone("home", "/", lambda: page.get_by_role("heading", name=support.team.name))
    # Past the filters (stacked, one per row) to the runs, which scroll sideways in their box.
    phone("runs-list", "/runs/", lambda: page.locator("#runs-table"), scroll_to=True)
    phone("run-detail", f"/runs/{data['failed'].id}/", lambda: page.get_by_test_id("rubric-passed"))
    phone("rubric-editor", f"/rubrics/{support.id}/", lambda: page.locator("h1"))
    phone("failed-criteria", f"/failures/?rubric={support.id}",
          lambda: page.get_by_test_id("failure-rates"))  # fmt: skip
    phone("team-settings", "/team/", lambda: page.get_by_role("cell", name="CI pipeline"))
    phone("alerts", "/reviews/alerts/", lambda: page.get_by_text("Firing", exact=True))
    # The review desk scrolled to the output under review.
    phone("review-run", f"/reviews/{support.id}/runs/{data['reviewed'][0].id}/",
          lambda: page.get_by_test_id("results"))  # fmt: skip
    page.get_by_test_id("output").scroll_into_view_if_needed()
    shot("phone-review-output", full_page=False)


def order_number_key(rubric) -> str:
    """The key of "Gives the order number", the criterion the partial answers miss."""
    return rubric.current_version.criteria.order_by("position")[1].key


def label_some_runs(rubric, user) -> list:
    """A reviewer's labels on a few judged runs: mostly agreeing, two overrides with notes."""
    from reviews.services import Reviewer, override_create

    runs = list(
        AgentRun.objects.filter(rubric=rubric, status="succeeded").order_by("created_at")[:6]
    )
    reviewer = Reviewer(user=user)
    for i, run in enumerate(runs):
        verdicts = CriterionVerdict.objects.filter(run=run, is_current=True).order_by("position")
        for v in verdicts:
            flip = (i, v.position) in {(0, 1), (3, 0)}
            override_create(
                run=run,
                criterion_key=v.criterion_key,
                satisfied=(not v.satisfied) if flip else v.satisfied,
                note="The judge missed the order number in the signature." if flip else "",
                reviewer=reviewer,
            )
    return runs


def rescore_in_process(rubric):
    """A finished re-score batch of the rubric's failing runs, executed here (no worker)."""
    from judging.services.execute import evaluation_execute
    from judging.services.rescore import RescoreScope, batch_create, batch_finish_if_done

    batch, _ = batch_create(team=rubric.team, rubric=rubric, scope=RescoreScope(failed_only=True))
    for evaluation_id in Evaluation.objects.filter(batch=batch).values_list("id", flat=True):
        Evaluation.objects.filter(pk=evaluation_id).update(held=False)
        evaluation_execute(evaluation_id=str(evaluation_id))
    batch_finish_if_done(batch_id=batch.pk)
    return batch
