"""Errors teams read name their own judge connection's address, never the deployment's.

The deployment's judge (EVALSITE_JUDGE_API_BASE) is the fake judge on an internal address;
when it fails, the evaluation's stored error, the API's and the run page's say "the
deployment's judge" instead of its URL, host:port or IP (judge_engine.redact.tenant_error).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from django.urls import reverse

from judge_engine.redact import DEPLOYMENT_JUDGE, tenant_error
from judging.services.execute import evaluation_execute
from runs.models import Evaluation
from teams.services import connection_create
from tests.page_helpers import signed_in

pytestmark = pytest.mark.django_db


def addresses(url: str) -> list[str]:
    parts = urlsplit(url)
    return [url, parts.netloc, parts.hostname or ""]


def attempt(make_run, rubric, output: str) -> Evaluation:
    run = make_run(rubric=rubric.slug, output=output)
    evaluation = Evaluation.objects.get(run=run)
    evaluation_execute(evaluation_id=str(evaluation.id))
    evaluation.refresh_from_db()
    return evaluation


@pytest.mark.parametrize("fault", ["timeout", "unreachable"])
def test_a_failing_deployment_judge_is_named_without_its_address(
    fake_judge, make_run, make_rubric, settings, owner, api, fault
):
    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = True
    settings.EVALSITE_JUDGE_TIMEOUT = 1
    if fault == "unreachable":
        settings.EVALSITE_JUDGE_API_BASE = "http://127.0.0.1:9/v1"
    base = settings.EVALSITE_JUDGE_API_BASE

    evaluation = attempt(make_run, make_rubric(), f"[[judge:{fault}]]")
    shown = [
        evaluation.error,
        api.get(f"/evaluations/{evaluation.id}").content.decode(),
        signed_in(owner).get(reverse("run_detail", args=[evaluation.run_id])).content.decode(),
    ]

    assert DEPLOYMENT_JUDGE in evaluation.error
    for text in shown:
        assert [a for a in addresses(base) if a in text] == []


def test_a_failing_team_connection_is_named_with_its_own_address(
    fake_judge, make_run, make_rubric, settings, team
):
    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = True
    theirs = "http://localhost:9/v1"
    connection = connection_create(team=team, name="ours", model="openai/x", api_base=theirs)

    evaluation = attempt(make_run, make_rubric(judge_connection=connection), "hello")

    # (Its IP is the fake judge's too, 127.0.0.1, so that part is hidden here.)
    assert theirs in evaluation.error


def test_every_form_of_the_deployment_address_is_hidden_and_ordinary_words_kept(settings):
    settings.EVALSITE_JUDGE_API_BASE = "http://judge.internal:8000/v1"
    text = (
        "could not reach the judge at http://judge.internal:8000/v1/chat/completions: "
        "Cannot connect to host judge.internal:8000 ('judge.internal', 8000); the judge said no"
    )

    cleaned = tenant_error(text)

    assert "judge.internal" not in cleaned
    assert cleaned.startswith("could not reach the judge at " + DEPLOYMENT_JUDGE)
    assert cleaned.endswith("the judge said no")
