"""Forms of the team pages: creating and joining a team, invitations, and team settings (API
keys, judge connections, prices, retention, budget)."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib.auth.forms import UserCreationForm

from evalsite.schemas import BIGINT_MAX, FLOAT_MAX, INT_MAX

from .memberships import TEAM_NAME_MAX
from .models import JudgeConnection, OtlpProtocol, Role
from .services import TeamValidationError


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


class ApiKeyForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="Where the key is used, e.g. “CI pipeline”.")


class TeamSettingsForm(forms.Form):
    confirm_cost_above = forms.DecimalField(
        label="Ask for confirmation above (USD)",
        min_value=0,
        max_digits=10,
        decimal_places=2,
        help_text="Re-score batches whose estimated judge cost is higher ask before starting.",
    )
    confirm_tokens_above = forms.IntegerField(
        required=False,
        label="When the cost is unknown, ask above (tokens)",
        min_value=0,
        max_value=BIGINT_MAX,
        help_text="For judges with no price (yours or litellm's): re-scores estimated above "
        "this many tokens ask before starting.",
    )
    judge_prices = forms.CharField(
        required=False,
        max_length=40_000,
        label="Judge prices (USD per million tokens)",
        help_text="One model a line: the litellm model string, the input price, the output "
        "price, e.g. “openai/my-judge 0.15 0.60”. They override litellm's table; a model "
        "priced by neither has an unknown cost.",
        widget=forms.Textarea(attrs={"rows": 3, "class": "mono"}),
    )

    def clean_judge_prices(self) -> dict[str, Any] | None:
        if "judge_prices" not in self.data:
            return None  # a form without the field leaves the prices as they are
        out: dict[str, Any] = {}
        for number, line in enumerate(self.cleaned_data.get("judge_prices", "").splitlines(), 1):
            parts = line.split()
            if not parts:
                continue
            try:
                model, prices = parts[0], [float(p) for p in parts[1:]]
            except ValueError:
                prices = []
            if len(prices) != 2:
                raise forms.ValidationError(f"line {number}: write “model input output”")
            out[model] = {"input": prices[0], "output": prices[1]}
        return out

    @staticmethod
    def initial_for(team: Any) -> dict[str, Any]:
        lines = [f"{m} {p['input']:g} {p['output']:g}" for m, p in team.judge_prices.items()]
        return {
            "confirm_cost_above": team.confirm_cost_above,
            "confirm_tokens_above": team.confirm_tokens_above,
            "judge_prices": "\n".join(lines),
        }


class RetentionForm(forms.Form):
    """How long runs are kept (owners: retention deletes data)."""

    retention_days = forms.IntegerField(
        required=False,
        label="Keep runs for (days)",
        min_value=0,
        max_value=INT_MAX,
        help_text="Runs older than this are deleted with their evaluations and labels, every "
        "hour. Empty: keep runs forever.",
    )
    retention_delete_protected = forms.BooleanField(
        required=False,
        label="Also delete protected runs",
        help_text="Golden-set runs, runs a reviewer labelled and runs judge examples came from "
        "are kept unless this is ticked.",
    )


class BudgetForm(forms.Form):
    """The team's judge budget: each limit optional (empty: no limit)."""

    daily_tokens = forms.IntegerField(
        label="Tokens per day", required=False, min_value=0, max_value=BIGINT_MAX
    )
    daily_usd = forms.FloatField(
        label="USD per day", required=False, min_value=0, max_value=FLOAT_MAX
    )
    monthly_tokens = forms.IntegerField(
        label="Tokens per month", required=False, min_value=0, max_value=BIGINT_MAX
    )
    monthly_usd = forms.FloatField(
        label="USD per month", required=False, min_value=0, max_value=FLOAT_MAX
    )
    # Set by "Save anyway" after the page warned that a limit is below what is already used.
    confirm = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def limits(self) -> dict[str, Any]:
        """The four limits (no confirm), for judging.services.budget.budget_update."""
        return {k: v for k, v in self.cleaned_data.items() if k != "confirm"}


class ConnectionForm(forms.Form):
    """A judge connection. The key field is write-only: never filled in from the stored key."""

    name = forms.CharField(max_length=100, help_text="How rubrics pick it, e.g. “team OpenAI”.")
    model = forms.CharField(
        max_length=200,
        help_text="A litellm model string, e.g. openai/gpt-4o-mini (openai/<name> with an API base).",
        widget=forms.TextInput(attrs={"class": "mono"}),
    )
    api_base = forms.CharField(
        required=False,
        max_length=500,
        label="API base URL",
        help_text="Blank: the provider's own endpoint.",
        widget=forms.TextInput(attrs={"class": "mono", "placeholder": "https://…/v1"}),
    )
    api_key = forms.CharField(
        required=False,
        max_length=2000,
        label="API key",
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
    )
    remove_key = forms.BooleanField(required=False, label="Remove the stored key")
    params = forms.CharField(
        required=False,
        max_length=5000,
        label="Parameters (JSON)",
        help_text='e.g. {"temperature": 0, "max_tokens": 800, "timeout": 60}',
        widget=forms.Textarea(attrs={"rows": 2, "class": "mono"}),
    )

    def clean_params(self) -> dict[str, Any]:
        text = self.cleaned_data.get("params", "").strip()
        try:
            value = json.loads(text) if text else {}
        except ValueError:
            raise forms.ValidationError("must be a JSON object") from None
        if not isinstance(value, dict):
            raise forms.ValidationError("must be a JSON object")
        return value

    @classmethod
    def for_connection(cls, connection: JudgeConnection) -> ConnectionForm:
        initial = {
            "name": connection.name,
            "model": connection.model,
            "api_base": connection.api_base,
            "params": json.dumps(connection.params) if connection.params else "",
        }
        return cls(initial=initial, prefix=f"conn-{connection.pk}")

    def apply_service_errors(self, error: TeamValidationError) -> None:
        for name, message in error.errors.items():
            field = name.split(".")[0]
            self.add_error(field if field in self.fields else None, message)


class _Unshown(forms.Textarea):
    """A textarea that never sends its value back: a refused form is typed again, its secret
    never shown twice (as PasswordInput(render_value=False))."""

    def format_value(self, value: Any) -> str | None:
        return None


EXPORT_PREFIX = "export"  # its fields' ids stay apart from the page's other forms


class OtelExportForm(forms.Form):
    """Where verdicts go as OpenTelemetry events (owners); the headers are write-only."""

    endpoint = forms.CharField(
        max_length=500,
        label="OTLP/HTTP logs endpoint",
        help_text="The full URL, e.g. https://otlp.example.com/v1/logs (a collector, Langfuse, "
        "Phoenix, Grafana, Honeycomb).",
    )
    protocol = forms.ChoiceField(choices=OtlpProtocol.choices, label="Protocol")
    headers = forms.CharField(
        required=False,
        label="Headers",
        widget=_Unshown(attrs={"rows": 3, "autocomplete": "off", "spellcheck": "false"}),
        help_text="One “Name: value” a line (e.g. x-api-key: …). Stored encrypted and never shown "
        "again; empty keeps the saved ones.",
    )
    clear_headers = forms.BooleanField(required=False, label="Remove the saved headers")

    def clean_headers(self) -> dict[str, str] | None:
        """The headers typed, or None (keep the saved ones)."""
        text = self.cleaned_data.get("headers") or ""
        if not text.strip():
            return None
        out: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            name, colon, value = line.partition(":")
            if not colon or not name.strip() or not value.strip():
                raise forms.ValidationError(f"line {number}: write it as “Name: value”")
            out[name.strip()] = value.strip()
        return out

    def export_fields(self) -> dict[str, Any]:
        """The keyword arguments of teams.otel_export.otel_export_set."""
        data = self.cleaned_data
        fields = {"endpoint": data["endpoint"], "protocol": data["protocol"]}
        if data["clear_headers"]:
            fields["headers"] = {}
        elif data["headers"] is not None:
            fields["headers"] = data["headers"]
        return fields
