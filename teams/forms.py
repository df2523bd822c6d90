"""Forms of the team pages that more than one view module shows."""

from __future__ import annotations

from django import forms

from .memberships import TEAM_NAME_MAX
from .models import Role


class TeamCreateForm(forms.Form):
    name = forms.CharField(
        max_length=TEAM_NAME_MAX, label="Team name", help_text="e.g. your company or group."
    )


class InviteForm(forms.Form):
    who = forms.CharField(
        max_length=254,
        label="Username or email",
        help_text="Someone who already has an account on this deployment.",
    )
    role = forms.ChoiceField(choices=Role.choices, initial=Role.EDITOR)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)
