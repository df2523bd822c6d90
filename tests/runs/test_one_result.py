"""One truth about a run on every surface (docs/api.md, "A run's result"): for runs in every
state, the API (one run, the list and its `passed` filter), the export (CSV and JSON lines),
the stored answer of POST /api/score, the runs list page and the run page all show the same
status, passed, score, alignment score and adjusted marker. The expectations are written out
per state here, not derived from the rule under test."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from judging.services.execute import evaluation_execute
from reviews.services import Reviewer, override_create
from runs.models import AgentRun, Evaluation, Kind, Status
from runs.schemas import score_out
from runs.selectors import evaluations_for_run, evaluations_scored, run_get
from runs.services.run_state import run_refresh
from tests.conftest import SUPPORT_CRITERIA, queued_evaluation
from tests.page_helpers import judge_pending, signed_in

pytestmark = pytest.mark.django_db

PASSING = "Your refund for order number 1234 was sent today, thanks for waiting."
FAILING = "Your refund was sent today."  # c2 (required) and c3 are not satisfied
ALIGNMENT_FAILS = " [[judge:out_of_range]]"  # the fake judge's alignment answer is invalid
# The fake judge refuses (400, permanent) every request carrying this criterion: the rubric
# evaluation fails while the alignment one (which never shows criteria) succeeds.
BROKEN = [{"description": "Stays polite [[judge:400]]", "required": True}]


@dataclass(frozen=True)
class Shown:
    """What a surface shows of a run's result; ``aligned``: an alignment score is shown."""

    status: str
    passed: bool | None
    score: float | None
    aligned: bool
    adjusted: bool = False


class World:
    """Rubrics and helpers that put runs into each state through the real services."""

    def __init__(self, make_rubric: Callable[..., Any], make_run: Callable[..., Any], owner):
        self.make_run = make_run
        self.plain = make_rubric(name="Plain", criteria=SUPPORT_CRITERIA, alignment_mode="off")
        self.aligned = make_rubric(name="Aligned", criteria=SUPPORT_CRITERIA, alignment_mode="user")
        self.broken = make_rubric(name="Broken", criteria=BROKEN, alignment_mode="user")
        self.unsampled = make_rubric(name="Sampled out", criteria=SUPPORT_CRITERIA, sample_rate=0)
        self.reviewer = Reviewer(user=owner)

    def run(self, rubric: Any, output: str = PASSING, **extra: Any) -> AgentRun:
        return self.make_run(rubric=rubric.slug if rubric else None, output=output, **extra)

    def judged(self, rubric: Any, output: str = PASSING) -> AgentRun:
        return judge_pending(self.run(rubric, output))

    def judge_kind(self, run: AgentRun, kind: str) -> None:
        for pk in Evaluation.objects.filter(run=run, kind=kind).values_list("pk", flat=True):
            evaluation_execute(evaluation_id=str(pk))

    def park(self, run: AgentRun, kind: str) -> AgentRun:
        """The budget's parking (judging.services.budget): queued evaluations of ``kind`` over
        budget, the run's state recomputed."""
        Evaluation.objects.filter(run=run, kind=kind, status=Status.QUEUED).update(
            status=Status.OVER_BUDGET
        )
        run_refresh(run.pk)
        return run

    def rescore_queued(self, run: AgentRun) -> AgentRun:
        """A re-score's start (judging.services.rescore): a newer queued evaluation and the run
        marked queued by a plain update, its stored result left as it was."""
        rubric = run.rubric
        version = rubric.current_version
        queued_evaluation(run=run, kind=Kind.RUBRIC, rubric=rubric, version=version)
        AgentRun.objects.filter(pk=run.pk).update(status=Status.QUEUED)
        return run

    def claimed(self, run: AgentRun) -> AgentRun:
        """A worker's claim (judging.services.execute): running, the run marked so."""
        Evaluation.objects.filter(run=run).update(status=Status.RUNNING)
        AgentRun.objects.filter(pk=run.pk).update(status=Status.RUNNING)
        return run

    def adjusted(self, run: AgentRun) -> AgentRun:
        override_create(
            run=run, criterion_key="c2", satisfied=True, note="it is there", reviewer=self.reviewer
        )
        return run


def _none(status: str) -> Shown:
    return Shown(status, None, None, aligned=False)


# state -> (how to build it, what every surface shows)
STATES: dict[str, tuple[Callable[[World], AgentRun], Shown]] = {
    "both succeeded": (lambda w: w.judged(w.aligned), Shown("succeeded", True, 1.0, True)),
    "rubric not passed": (
        lambda w: w.judged(w.plain, FAILING),
        Shown("succeeded", False, 0.0, False),
    ),
    "alignment failed, rubric passed": (
        lambda w: w.judged(w.aligned, PASSING + ALIGNMENT_FAILS),
        _none("failed"),
    ),
    "rubric failed, alignment succeeded": (lambda w: w.judged(w.broken), _none("failed")),
    "rubric over budget": (lambda w: w.park(w.run(w.plain), Kind.RUBRIC), _none("over_budget")),
    "alignment over budget, rubric passed": (
        lambda w: (
            run := w.run(w.aligned),
            w.judge_kind(run, Kind.RUBRIC),
            w.park(run, Kind.ALIGNMENT),
        )[-1],
        _none("over_budget"),
    ),
    "not sampled": (lambda w: w.run(w.unsampled), _none("not_sampled")),
    "nothing to judge": (lambda w: w.judged(None), _none("nothing_to_judge")),
    "queued": (lambda w: w.run(w.aligned), _none("queued")),
    "running": (lambda w: w.claimed(w.run(w.aligned)), _none("running")),
    "re-score queued on a passed run": (
        lambda w: w.rescore_queued(w.judged(w.plain)),
        _none("queued"),
    ),
    "re-score over budget on a passed run": (
        lambda w: w.park(w.rescore_queued(w.judged(w.plain)), Kind.RUBRIC),
        _none("over_budget"),
    ),
    "human-adjusted to a pass": (
        lambda w: w.adjusted(w.judged(w.plain, FAILING)),
        Shown("succeeded", True, 1.0, False, adjusted=True),
    ),
    "human-adjusted, alignment failed": (
        lambda w: w.adjusted(w.judged(w.aligned, FAILING + ALIGNMENT_FAILS)),
        _none("failed"),
    ),
}


def _api(item: dict[str, Any]) -> Shown:
    return Shown(
        item["status"], item["passed"], item["score"], item["alignment_score"] is not None,
        item["adjusted"],
    )  # fmt: skip


def _csv(row: dict[str, str]) -> Shown:
    passed = {"True": True, "False": False, "": None}[row["passed"]]
    score = float(row["score"]) if row["score"] else None
    return Shown(
        row["status"], passed, score, row["alignment_score"] != "", row["adjusted"] == "True"
    )


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def _list_cell(page: str, run: AgentRun) -> tuple[str, str]:
    """The runs list's result cell and alignment cell of ``run``, as text."""
    row = page[page.index(f'id="status-{run.pk}"') :]
    cell = row[: row.index("</td>")]
    alignment = row[row.index('data-testid="run-alignment">') :]
    return _text(cell.split(">", 1)[1]), _text(
        alignment[: alignment.index("</td>")].split(">", 1)[1]
    )


def _page_shows(shown: Shown) -> tuple[str, str]:
    """What the pages must show: the result's word, or the status when there is none."""
    if shown.passed is not None:
        return ("Passed" if shown.passed else "Failed"), ""
    if shown.status == "over_budget":  # one wording everywhere (judging.services.budget_wait)
        return "", "Waiting for budget — resumes"
    return "", shown.status.replace("_", " ")


@pytest.fixture
def world(make_rubric, make_run, owner, fake_judge) -> World:
    return World(make_rubric, make_run, owner)


def test_every_surface_shows_the_same_result_for_runs_in_every_state(api, world, owner):
    built = {name: (build(world), shown) for name, (build, shown) in STATES.items()}
    listed = {i["id"]: i for i in api.get("/runs", limit=100).json()["items"]}
    jsonl = {r["run_id"]: r for r in map(json.loads, _body(api.get("/runs/export")).splitlines())}
    csv_rows = {
        r["run_id"]: r
        for r in csv.DictReader(io.StringIO(_body(api.get("/runs/export", format="csv"))))
    }
    by_passed = {
        value: {i["id"] for i in api.get("/runs", passed=value, limit=100).json()["items"]}
        for value in ("true", "false")
    }
    client = signed_in(owner)
    runs_page = client.get("/runs/").content.decode()

    for name, (run, shown) in built.items():
        pk = str(run.pk)
        stored = run_get(team=run.team, run_id=run.pk)
        evaluations = evaluations_for_run(run=stored)
        surfaces = {
            "detail": _api(api.get(f"/runs/{pk}").json()),
            "list": _api(listed[pk]),
            "export jsonl": _api(jsonl[pk]),
            "export csv": _csv(csv_rows[pk]),
        }
        assert surfaces == dict.fromkeys(surfaces, shown), name
        has_rubric = any(e.kind == Kind.RUBRIC for e in evaluations)
        if evaluations:  # POST /api/score refuses a run with nothing to score
            answer = score_out(stored, evaluations_scored(ids=[e.id for e in evaluations]))
            assert (answer["status"], answer["passed"]) == (shown.status, shown.passed), name
            assert answer["score"] == (shown.score if has_rubric else answer["score"]), name
        passed_filter = {"true": shown.passed is True, "false": shown.passed is False}
        assert {v: pk in ids for v, ids in by_passed.items()} == passed_filter, name

        word, status = _page_shows(shown)
        cell, alignment = _list_cell(runs_page, run)
        detail = client.get(f"/runs/{pk}/").content.decode()
        line = detail[detail.index('data-testid="run-result"') :].split("\n", 1)[0]
        result = _text(line.split(">", 1)[1])
        for text in (cell, result):
            assert ("Passed" in text, "Failed" in text) == (word == "Passed", word == "Failed"), (
                name,
                text,
            )
        assert status.lower() in cell.lower() or (status == "failed" and "Judge error" in cell), (
            name,
            cell,
        )
        assert (alignment != "—") == shown.aligned, (name, alignment)
        assert ("adjusted" in cell) == shown.adjusted, (name, cell)


def _body(response: Any) -> str:
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content).decode()
