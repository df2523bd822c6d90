"""Forms for the run pages: they echo and label input; runs.selectors.RunFilters validates."""

from __future__ import annotations

from typing import Literal

from django import forms

from judging.services.budget_wait import WAITING

from .models import Status

SORTS = [("newest", "Newest first"), ("oldest", "Oldest first")]
RUBRIC = [("rubric", "rubric")]


class RunFilterForm(forms.Form):
    """The runs list's filter bar. Always bound to the query string so the page shows what it
    filters by; invalid values are reported by RunFilters next to the same names."""

    rubric = forms.CharField(required=False)
    version = forms.CharField(required=False)
    passed = forms.ChoiceField(
        required=False, choices=[("", "Any result"), ("true", "Passed"), ("false", "Failed")]
    )
    failing_criterion = forms.CharField(required=False, label="Failing criterion")
    status = forms.ChoiceField(
        required=False,
        # Over budget reads as every surface shows it (judging.services.budget_wait).
        choices=[
            ("", "Any status"),
            *((v, WAITING if v == Status.OVER_BUDGET else label) for v, label in Status.choices),
        ],
    )
    agent = forms.CharField(required=False)
    tool = forms.CharField(required=False, label="Called tool")
    since = forms.CharField(required=False, label="From")
    until = forms.CharField(required=False, label="Until")
    q = forms.CharField(required=False, label="Search")
    sort = forms.ChoiceField(required=False, choices=SORTS)

    def value(self, name: str) -> str:
        return (self.data.get(name) or "").strip()

    def sort_order(self) -> Literal["newest", "oldest"]:
        return "oldest" if self.value("sort") == "oldest" else "newest"


class RescoreForm(forms.Form):
    """A re-score request from a button: one run, the selected runs, every failing run of a
    rubric, or every run of a rubric (``rubric``). ``target_version`` judges on that version
    of the rubric (default its current one). ``confirm`` is set by the confirmation step for
    costly batches."""

    scope = forms.ChoiceField(
        choices=[("run", "run"), ("selected", "selected"), ("failing", "failing"), *RUBRIC]
    )
    rubric = forms.UUIDField(required=False)
    target_version = forms.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
    run = forms.UUIDField(required=False)
    criterion = forms.CharField(required=False, max_length=32)
    confirm = forms.BooleanField(required=False)
    force = forms.BooleanField(required=False)
    next = forms.CharField(required=False, max_length=2000)

    def clean(self) -> dict:
        data = super().clean() or {}
        if data.get("scope") in ("failing", "rubric") and not data.get("rubric"):
            self.add_error("rubric", "name the rubric whose failing runs to re-score")
        if data.get("scope") == "run" and not data.get("run"):
            self.add_error("run", "name the run to re-score")
        return data
