"""Every number an HTML form accepts is bounded: out of range is a field error, never a 500.

The fields are found, not listed: every IntegerField, FloatField and DecimalField of every
form class of our apps, so a field added later is covered. Then each page with numeric inputs
is posted those values, and must answer with the form and an error on the field.
"""

from __future__ import annotations

from typing import Any

import pytest
from django import forms
from django.test import Client
from django.urls import get_resolver, reverse

from teams.models import Team

pytestmark = pytest.mark.django_db

APPS = ("teams.", "rubrics.", "runs.", "reviews.", "evalsite.")
NUMERIC = (forms.IntegerField, forms.FloatField, forms.DecimalField)
HUGE = ["1e30", "-1e30", str(10**30), str(-(10**30)), str(2**63), str(-(2**63) - 1), "1e309"]


def form_classes() -> list[type[forms.Form]]:
    get_resolver().url_patterns  # noqa: B018 - imports every view, and so every form
    found, todo = [], list(forms.BaseForm.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith(APPS):
            found.append(cls)
    return found


def numeric_fields() -> list[tuple[str, str]]:
    return sorted(
        {
            (f"{cls.__module__}.{cls.__qualname__}", name)
            for cls in form_classes()
            for name, field in getattr(cls, "base_fields", {}).items()
            if isinstance(field, NUMERIC)
        }
    )


def field_of(qualified: str, name: str) -> forms.Field:
    (cls,) = [c for c in form_classes() if f"{c.__module__}.{c.__qualname__}" == qualified]
    return cls.base_fields[name]


def test_the_forms_have_numeric_fields_to_check():
    found = numeric_fields()
    assert ("teams.forms.BudgetForm", "daily_tokens") in found
    assert ("teams.forms.TeamSettingsForm", "confirm_tokens_above") in found
    assert len(found) >= 15


@pytest.mark.parametrize(("form", "name"), numeric_fields())
def test_every_numeric_form_field_refuses_what_no_column_holds(form, name):
    field = field_of(form, name)
    accepted = []
    for value in HUGE:
        try:
            field.clean(value)
        except forms.ValidationError:
            continue
        accepted.append(value)
    assert accepted == []


def errors_on(response, name: str) -> bool:
    """Whether a form of the page shows an error on the field ``name``."""
    for context in response.context or []:
        for value in context.flatten().values():
            if isinstance(value, forms.BaseForm) and value.errors.get(name):
                return True
    return False


def signed_in(user) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


PAGES: list[tuple[str, str, dict[str, Any]]] = [
    ("team_settings_save", "confirm_tokens_above", {"confirm_cost_above": "5"}),
    ("team_settings_save", "confirm_cost_above", {"confirm_tokens_above": "5"}),
    ("team_retention_save", "retention_days", {}),
    ("team_budget_save", "daily_tokens", {}),
    ("team_budget_save", "daily_usd", {}),
    ("team_budget_save", "monthly_tokens", {}),
    ("team_budget_save", "monthly_usd", {}),
    ("reviews:alert_rule_new", "threshold", {"kind": "budget"}),
    ("reviews:alert_rule_new", "window_hours", {"kind": "budget", "threshold": "50"}),
    ("reviews:alert_rule_new", "cooldown_minutes", {"kind": "budget", "threshold": "50"}),
]
RUBRIC_FIELDS = ["temperature", "max_tokens", "timeout", "scale", "sample_rate"]
RUBRIC_BASE = {"name": "Support quality", "strategy": "batched", "alignment_mode": "off"}


@pytest.mark.parametrize(("url", "name", "base"), PAGES)
def test_a_team_page_refuses_a_huge_number_with_a_field_error(owner, team, url, name, base):
    client = signed_in(owner)
    problems = []
    for value in HUGE:
        response = client.post(reverse(url), {**base, name: value})
        if response.status_code >= 500 or not errors_on(response, name):
            problems.append((value, response.status_code))
    assert problems == []
    assert Team.objects.get(pk=team.pk).confirm_tokens_above == 200_000


@pytest.mark.parametrize("name", RUBRIC_FIELDS)
def test_the_rubric_settings_refuse_a_huge_number_with_a_field_error(owner, make_rubric, name):
    rubric = make_rubric()
    client = signed_in(owner)
    problems = []
    for value in HUGE:
        data = {**RUBRIC_BASE, "scale": "1", name: value}
        response = client.post(reverse("rubric_settings", args=[rubric.id]), data)
        if response.status_code >= 500 or not errors_on(response, name):
            problems.append((value, response.status_code))
    assert problems == []
