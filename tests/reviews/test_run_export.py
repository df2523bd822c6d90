"""The runs export: CSV and JSONL, the runs list's filters, team scope, human-adjusted
verdicts, formula cells quoted."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

from reviews.selectors.run_export import run_export_rows
from reviews.services import override_create
from runs.selectors.filters import RunFilters

from .conftest import FAILING

pytestmark = pytest.mark.django_db


def _body(response: Any) -> str:
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content).decode()


def _jsonl(response: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _body(response).splitlines()]


def test_jsonl_export_carries_the_human_adjusted_verdicts_and_result(api, judged_run, reviewer):
    judged_run(external_id="ok-1")
    failing = judged_run(external_id="bad-1", output=FAILING)
    override_create(run=failing, criterion_key="c2", satisfied=True, note="fine", reviewer=reviewer)
    failing.refresh_from_db()

    rows = {r["external_id"]: r for r in _jsonl(api.get("/runs/export", format="jsonl"))}

    assert set(rows) == {"ok-1", "bad-1"}
    bad = rows["bad-1"]
    c2 = next(v for v in bad["verdicts"] if v["criterion_id"] == "c2")
    assert (c2["judge_satisfied"], c2["human_satisfied"], c2["satisfied"]) == (False, True, True)
    assert bad["adjusted"] is True and bad["criteria_failed"] == ["c3"]
    assert bad["passed"] is failing.passed is True and bad["score"] == failing.score
    assert rows["ok-1"]["adjusted"] is False and rows["ok-1"]["criteria_failed"] == []


def test_csv_export_has_a_header_and_quotes_cells_that_start_like_a_formula(api, judged_run):
    judged_run(external_id="=HYPERLINK(1)", agent="@bot")
    judged_run(external_id="plain", agent="-x", output=FAILING)

    response = api.get("/runs/export", format="csv")
    assert response["Content-Type"].startswith("text/csv")
    rows = {r["external_id"]: r for r in csv.DictReader(io.StringIO(_body(response)))}

    assert rows["'=HYPERLINK(1)"]["agent"] == "'@bot"
    assert rows["plain"]["agent"] == "'-x"
    assert rows["plain"]["criteria_failed"] == "c2 c3"
    assert rows["plain"]["verdicts"] == "c1=pass;c2=fail;c3=fail"
    assert rows["plain"]["passed"] == "False"


def test_export_applies_the_runs_list_filters_and_rejects_bad_ones_naming_them(api, judged_run):
    judged_run(external_id="a", agent="alpha")
    judged_run(external_id="b", agent="beta", output=FAILING)

    assert [r["external_id"] for r in _jsonl(api.get("/runs/export", agent="beta"))] == ["b"]
    assert [r["external_id"] for r in _jsonl(api.get("/runs/export", passed="true"))] == ["a"]
    refused = api.get("/runs/export", since="yesterday")
    assert refused.status_code == 422 and refused.json()["detail"][0]["loc"][-1] == "since"
    assert api.get("/runs/export", format="xlsx").status_code == 422


def test_export_is_scoped_to_the_callers_team_and_walks_keyset_chunks_in_order(
    api, other_api, team, judged_run, django_assert_num_queries
):
    for i in range(5):
        judged_run(external_id=f"r{i}")
    newest_first = [f"r{i}" for i in range(4, -1, -1)]

    with django_assert_num_queries(9):  # 3 chunks of 2, 2, 1: runs, labels, verdicts each
        rows = list(run_export_rows(team=team, filters=RunFilters(), chunk=2))
    assert [r["external_id"] for r in rows] == newest_first
    assert [r["external_id"] for r in _jsonl(api.get("/runs/export"))] == newest_first
    assert _jsonl(other_api.get("/runs/export")) == []


def test_the_runs_list_links_to_the_export_with_its_filters_and_the_page_export_streams(
    client, viewer, judged_run
):
    judged_run(external_id="a", agent="alpha")
    judged_run(external_id="b", agent="beta")
    client.force_login(viewer)

    page = client.get("/runs/", {"agent": "beta"}).content.decode()
    assert 'href="/runs/export.csv?agent=beta"' in page

    rows = list(csv.DictReader(io.StringIO(_body(client.get("/runs/export.csv?agent=beta")))))
    assert [r["external_id"] for r in rows] == ["b"]
    assert client.get("/runs/export.xlsx").status_code == 404
    assert client.get("/runs/export.csv?since=nonsense").status_code == 400


def test_signed_out_callers_cannot_export(anon, client):
    assert anon.get("/runs/export").status_code == 401
    assert client.get("/runs/export.csv").status_code == 302
