"""Forms of the team pages that more than one view module shows."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import UserCreationForm

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
        help_text="A username, or an email address: someone without an account gets an "
        "invitation link to make one.",
    )
    role = forms.ChoiceField(choices=Role.choices, initial=Role.EDITOR)


class InviteSignupForm(UserCreationForm):
    """An account made from an invitation: the email is the invited one, shown, not asked."""

    class Meta(UserCreationForm.Meta):
        fields = ("username",)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)
