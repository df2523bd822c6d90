"""Helpers for the dashboard's page tests (tests/rubrics/test_views*, tests/runs/test_views*,
tests/browser): signed-in clients, judged runs made through the real services, query counts."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from judging.services.execute import evaluation_execute
from runs.models import AgentRun, Evaluation, Status

XSS = "<script>alert(1)</script>"


def signed_in(user: Any, **kwargs: Any) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def judge_pending(run: AgentRun) -> AgentRun:
    """Execute the run's queued evaluations in this process against the configured (fake)
    judge: the real claim → judge → record path, without a worker. When committed data lets
    a running worker process claim one first ("skipped" here), wait for it to finish."""
    from tests.conftest import wait_for

    pending = Evaluation.objects.filter(run=run, status__in=[Status.QUEUED, Status.RUNNING])
    for evaluation_id in pending.values_list("id", flat=True):
        evaluation_execute(evaluation_id=str(evaluation_id))
    wait_for(
        lambda: not pending.exists(), timeout=30, message=f"evaluations of run {run.pk} to end"
    )
    run.refresh_from_db()
    return run


def judged_run(make_run: Any, **payload: Any) -> AgentRun:
    return judge_pending(make_run(**payload))


def queries_for(client: Client, url: str) -> int:
    """How many SQL queries one GET of ``url`` runs (the page must answer 200)."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, response.status_code
    return len(captured)


def htmx_settled(page: Any) -> None:
    """Wait until htmx has finished swapping and settling new content. htmx binds the
    triggers of swapped-in elements when it settles them (about 20 ms after the swap), so a
    change made before that — a test is that quick, a person is not — would go unnoticed."""
    page.wait_for_function(
        "() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling, .htmx-added')"
    )
