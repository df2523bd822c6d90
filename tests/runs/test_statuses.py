"""The status type the API and filters accept is the model's list of statuses."""

from __future__ import annotations

from typing import get_args

from runs.models import FINAL_STATUSES, PENDING_STATUSES, Status, StatusChoice


def test_the_status_type_names_every_status_and_nothing_else():
    assert sorted(get_args(StatusChoice)) == sorted(Status.values)


def test_every_status_is_either_pending_or_final():
    assert sorted([*PENDING_STATUSES, *FINAL_STATUSES]) == sorted(Status.values)
