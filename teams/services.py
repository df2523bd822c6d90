"""Writes for teams, memberships, API keys and judge connections."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import RestrictedError
from django.utils import timezone
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from evalsite.errors import Conflict, FieldErrors
from evalsite.outbound import Purpose, outbound_refusal
from judge_engine.judge import BODY_PARAMS, connection_route_problem

from .crypto import SecretUnreadable, secret_decrypt, secret_encrypt, secret_reencrypt
from .models import ApiKey, JudgeConnection, Membership, OtelExport, Role, Team
from .prices import judge_prices_clean, token_threshold_error

KEY_PREFIX = "es_"


def hash_api_key(raw: str) -> str:
    # API keys are 32 random bytes: a fast hash is enough, unlike passwords.
    return hashlib.sha256(raw.encode()).hexdigest()


def team_create(*, name: str, slug: str, owner: User | None = None) -> Team:
    with transaction.atomic():
        team = Team.objects.create(
            name=name, slug=slug, webhook_secret_encrypted=secret_encrypt(secrets.token_hex(32))
        )
        if owner is not None:
            Membership.objects.create(team=team, user=owner, role=Role.OWNER)
    return team


def team_webhook_secret(*, team: Team) -> str:
    """The secret that signs the team's webhooks (decrypted; never shown on a page)."""
    return secret_decrypt(team.webhook_secret_encrypted)


def team_webhook_secret_rotate(*, team: Team) -> str:
    """Replace the webhook signing secret and return the new one: the only time anyone sees
    it. Deliveries signed from now on use it."""
    raw = secrets.token_hex(32)
    team.webhook_secret_encrypted = secret_encrypt(raw)
    team.webhook_secret_rotated_at = timezone.now()
    team.save(update_fields=["webhook_secret_encrypted", "webhook_secret_rotated_at"])
    return raw


def secrets_reencrypt() -> tuple[int, int]:
    """Re-encrypt every stored secret (connection keys, webhook secrets, export headers) with
    the first key of EVALSITE_SECRETS_KEY; (re-encrypted, unreadable). Run after putting a new
    key first."""
    done = unreadable = 0
    rows = [
        *((c, "key_ciphertext") for c in JudgeConnection.objects.exclude(key_ciphertext="")),
        *(
            (t, "webhook_secret_encrypted")
            for t in Team.objects.exclude(webhook_secret_encrypted="")
        ),
        *((e, "headers_ciphertext") for e in OtelExport.objects.exclude(headers_ciphertext="")),
    ]
    for row, field in rows:
        try:
            setattr(row, field, secret_reencrypt(getattr(row, field)))
        except SecretUnreadable:
            unreadable += 1
            continue
        row.save(update_fields=[field])
        done += 1
    return done, unreadable


def membership_set(*, team: Team, user: User, role: str) -> Membership:
    membership, _ = Membership.objects.update_or_create(
        team=team, user=user, defaults={"role": role}
    )
    return membership


def api_key_create(*, team: Team, name: str, created_by: User | None = None) -> tuple[ApiKey, str]:
    """Create a key and return it with its secret, which is never retrievable again."""
    raw = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey.objects.create(
        team=team,
        name=name,
        prefix=raw[:10],
        hashed_key=hash_api_key(raw),
        created_by=created_by,
    )
    return key, raw


def api_key_revoke(*, key: ApiKey) -> ApiKey:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key


def team_update_settings(
    *,
    team: Team,
    confirm_cost_above: Any = None,
    confirm_tokens_above: Any = None,
    judge_prices: Any = None,
) -> Team:
    """Team-wide settings (the dashboard's and PATCH /api/team/settings); only the fields
    given (not None) change. Errors name the field."""
    errors: dict[str, str] = {}
    fields: dict[str, Any] = {}
    if confirm_cost_above is not None:
        amount, problem = _dollars(confirm_cost_above)
        errors.update({"confirm_cost_above": problem} if problem else {})
        fields["confirm_cost_above"] = amount
    if confirm_tokens_above is not None:
        if problem := token_threshold_error(confirm_tokens_above):
            errors["confirm_tokens_above"] = problem
        fields["confirm_tokens_above"] = confirm_tokens_above
    if judge_prices is not None:
        fields["judge_prices"], found = judge_prices_clean(judge_prices)
        errors.update(found)
    if errors:
        raise TeamValidationError(errors)
    for name, value in fields.items():
        setattr(team, name, value)
    team.save(update_fields=list(fields))
    return team


# A century: anything longer is a typo, not a policy.
RETENTION_DAYS_MAX = 36_500
UNCHANGED: Any = object()


def team_update_retention(
    *, team: Team, retention_days: Any = UNCHANGED, delete_protected: Any = UNCHANGED
) -> Team:
    """How long the team keeps runs (owners: it deletes data). ``retention_days`` None keeps
    runs forever; otherwise whole days in 1..RETENTION_DAYS_MAX. Errors name the field."""
    errors: dict[str, str] = {}
    fields: dict[str, Any] = {}
    if retention_days is not UNCHANGED:
        if problem := retention_days_error(retention_days):
            errors["retention_days"] = problem
        fields["retention_days"] = retention_days
    if delete_protected is not UNCHANGED:
        if not isinstance(delete_protected, bool):
            errors["retention_delete_protected"] = "must be true or false"
        fields["retention_delete_protected"] = delete_protected
    if errors:
        raise TeamValidationError(errors)
    for name, value in fields.items():
        setattr(team, name, value)
    team.save(update_fields=list(fields))
    return team


def retention_days_error(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, int):
        return "must be a whole number of days, or null to keep runs forever"
    if not 1 <= value <= RETENTION_DAYS_MAX:
        return f"must be between 1 and {RETENTION_DAYS_MAX:,} days (or null: keep forever)"
    return ""


def _dollars(value: Any) -> tuple[Decimal, str]:
    try:
        amount = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return Decimal(0), "must be a number of dollars"
    if not amount.is_finite() or amount < 0 or amount >= Decimal("100000000"):
        return Decimal(0), "must be between 0 and 99,999,999.99"
    return amount.quantize(Decimal("0.01")), ""


class TeamValidationError(FieldErrors):
    """Invalid team or connection input; ``errors`` maps each field to a message."""


# --- Judge connections ---------------------------------------------------------------------------


class ConnectionInUse(Conflict):
    """The connection is still chosen by rubrics (a 409)."""


def cap_timeout(value: float | None) -> float | None:
    """A judge timeout within EVALSITE_JUDGE_MAX_TIMEOUT (for rubrics and connections)."""
    return _capped(value, "EVALSITE_JUDGE_MAX_TIMEOUT", "seconds", "{:g}")


def cap_tokens(value: int | None) -> int | None:
    """A judge token limit within EVALSITE_JUDGE_MAX_TOKENS (for rubrics and connections)."""
    return _capped(value, "EVALSITE_JUDGE_MAX_TOKENS", "tokens", "{:,}")


def _capped(value: Any, setting: str, unit: str, shown: str) -> Any:
    cap = getattr(settings, setting)
    if value is not None and value > cap:
        raise PydanticCustomError(
            "judge_cap", f"at most {{cap}} {unit} ({setting})", {"cap": shown.format(cap)}
        )
    return value


class ConnectionParams(BaseModel):
    """A connection's request parameters: sampling, limits and OpenAI request body fields.
    litellm options (extra_headers, api_key, api_base, ...) are refused: they would change
    where requests go or what they carry."""

    model_config = ConfigDict(extra="allow")
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, gt=0)
    max_completion_tokens: int | None = Field(default=None, gt=0)
    timeout: float | None = Field(default=None, gt=0)

    _timeout_cap = field_validator("timeout")(cap_timeout)
    _tokens_cap = field_validator("max_tokens", "max_completion_tokens")(cap_tokens)

    @model_validator(mode="after")
    def _only_body_fields(self) -> ConnectionParams:
        for name in self.model_extra or {}:
            if name not in BODY_PARAMS:
                raise PydanticCustomError(
                    "judge_param",
                    "{name} is not a judge parameter: use temperature, max_tokens, timeout or "
                    "an OpenAI request body field ({fields})",
                    {"name": name, "fields": ", ".join(sorted(BODY_PARAMS))},
                )
        return self


# What one connection field cleans to, and its errors by field (none when it is valid).
Cleaned = tuple[Any, dict[str, str]]


def _clean_connection(team: Team, fields: dict[str, Any], current: JudgeConnection | None):
    errors: dict[str, str] = {}
    out: dict[str, Any] = {}
    for name, clean in CONNECTION_RULES.items():
        if name in fields:
            out[name], problems = clean(fields[name], team=team, current=current)
            errors.update(problems)
    if "model" not in errors and "api_base" not in errors:
        model = out.get("model", current.model if current else "")
        api_base = out.get("api_base", current.api_base if current else "")
        if problem := connection_route_problem(model, api_base or None):
            errors["model"] = problem
    if errors:
        raise TeamValidationError(errors)
    return out


def _connection_name(value: Any, *, team: Team, current: JudgeConnection | None) -> Cleaned:
    name = str(value or "").strip()
    if not name or len(name) > 100:
        return name, {"name": "1 to 100 characters"}
    if _name_taken(team, name, current):
        return name, {"name": f"this team already has a connection named {name!r}"}
    return name, {}


def _connection_api_base(value: Any, **_: Any) -> Cleaned:
    api_base = str(value or "").strip()
    refusal = _api_base_refusal(api_base)
    return api_base, ({"api_base": refusal} if refusal else {})


def _connection_model(value: Any, **_: Any) -> Cleaned:
    model = str(value or "").strip()
    if not model or len(model) > 200 or " " in model:
        return model, {"model": "a litellm model string, e.g. openai/gpt-4o-mini"}
    return model, {}


def _connection_params(value: Any, **_: Any) -> Cleaned:
    try:
        return ConnectionParams.model_validate(value or {}).model_dump(exclude_none=True), {}
    except ValidationError as exc:
        return None, _param_errors(exc)


# The rule for each field a write may give, in the order its errors are reported; the route
# (model and endpoint together) is checked after them.
CONNECTION_RULES: dict[str, Callable[..., Cleaned]] = {
    "name": _connection_name,
    "api_base": _connection_api_base,
    "model": _connection_model,
    "params": _connection_params,
}


def _name_taken(team: Team, name: str, current: JudgeConnection | None) -> bool:
    others = JudgeConnection.objects.filter(team=team, name=name)
    if current is not None:
        others = others.exclude(pk=current.pk)
    return others.exists()


def _api_base_refusal(api_base: str) -> str | None:
    if not api_base:
        return None
    if len(api_base) > 500:
        return "at most 500 characters"
    return outbound_refusal(api_base, purpose=Purpose.JUDGE)


def _param_errors(exc: ValidationError) -> dict[str, str]:
    out = {}
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        out[f"params.{loc}" if loc else "params"] = err["msg"]
    return out


def _set_key(connection: JudgeConnection, api_key: str | None) -> None:
    key = (api_key or "").strip()
    if len(key) > 2000:
        raise TeamValidationError({"api_key": "at most 2,000 characters"})
    connection.key_ciphertext = secret_encrypt(key) if key else ""
    connection.key_hint = key[-4:] if len(key) >= 12 else ""


def connection_create(
    *,
    team: Team,
    name: str,
    model: str,
    api_base: str = "",
    api_key: str | None = None,
    params: dict[str, Any] | None = None,
) -> JudgeConnection:
    """A new connection. The key is encrypted; nothing returns it again."""
    fields = {"name": name, "model": model, "api_base": api_base, "params": params}
    connection = JudgeConnection(team=team, **_clean_connection(team, fields, None))
    _set_key(connection, api_key)
    try:
        with transaction.atomic():
            connection.save(force_insert=True)
    except IntegrityError:  # the same name created at the same moment
        raise TeamValidationError(
            {"name": f"this team already has a connection named {name.strip()!r}"}
        ) from None
    return connection


CONNECTION_FIELDS = ("name", "model", "api_base", "api_key", "params")


def connection_update(*, connection: JudgeConnection, **fields: Any) -> JudgeConnection:
    """Change the fields given. ``api_key`` replaces the key (empty or None removes it)."""
    unknown = set(fields) - set(CONNECTION_FIELDS)
    if unknown:
        raise TeamValidationError({f: "unknown field" for f in sorted(unknown)})
    cleaned = _clean_connection(connection.team, fields, connection)
    for name, value in cleaned.items():
        setattr(connection, name, value)
    if "api_key" in fields:
        _set_key(connection, fields["api_key"])
    try:
        with transaction.atomic():
            connection.save()
    except IntegrityError:
        raise TeamValidationError(
            {"name": f"this team already has a connection named {connection.name!r}"}
        ) from None
    return connection


def connection_delete(*, connection: JudgeConnection) -> None:
    """Delete it; refused while rubrics choose it. Evaluations already queued with it fail
    with a permanent error when their turn comes (its key is gone)."""
    try:
        connection.delete()
    except RestrictedError as exc:
        names = sorted({str(obj) for obj in exc.restricted_objects})
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        raise ConnectionInUse(
            f"rubrics still use the connection {connection.name!r} ({shown}): choose another "
            "judge for them first"
        ) from None
