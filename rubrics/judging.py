"""A rubric's judge, in one place: which judge a rubric may choose, what an evaluation freezes
of it, and the judge (address, key, limits) built from that when the evaluation is judged.

Where requests go (docs/security.md, "Judge credentials"): with a judge connection chosen,
requests go to the connection's api_base (or its provider's default endpoint when it has none)
with the connection's own key, read and decrypted when the evaluation is judged, or with no key.
With no connection they go to the deployment's judge (EVALSITE_JUDGE_API_BASE, or the provider
default of EVALSITE_JUDGE_MODEL), the only judge that ever gets EVALSITE_JUDGE_API_KEY; a rubric
may then name another model only of the same litellm provider, since a model string of another
provider ("anthropic/...", "ollama/...") would carry the deployment's key to another endpoint.
A judge that must not be called (deleted connection, unreadable key, a model of another
provider) comes back with ``unusable`` set: the engine fails its calls with that permanent error
before sending anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol, cast

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from evalsite.outbound import Purpose, outbound_guarded
from judge_engine import JudgeConfig
from judge_engine.judge import connection_route_problem, model_provider
from judge_engine.pricing import price_for
from teams.crypto import SecretUnreadable, secret_decrypt
from teams.models import JudgeConnection, Team
from teams.selectors import judge_connection_get, judge_connections_by_id
from teams.services import cap_timeout, cap_tokens

from .models import Rubric

CREATE_A_CONNECTION = "create a judge connection (team settings) and choose it"

API_BASE_MOVED = (
    "a rubric no longer sets api_base: create a judge connection (team settings or "
    "POST /api/connections) with that api_base and choose it as the rubric's judge_connection"
)


# Sent as the key of a connection that has none, so that litellm does not fall back to a
# provider key in the server's environment (OPENAI_API_KEY, ...).
NO_KEY = "none"
DELETED = (
    "the judge connection this evaluation was queued with has been deleted: choose a judge "
    "for the rubric and re-score"
)
LEGACY_BASE = (
    "this evaluation was queued for a judge at an api_base set on the rubric, which evalsite "
    "no longer calls: choose a judge connection for the rubric and re-score"
)
# rubrics migration 0003 moves a pending evaluation's rubric-set api_base here.
LEGACY_KEY = "legacy_api_base"


# --- Choosing a rubric's judge (validated on every write) ---------------------------------------


class JudgeParams(BaseModel):
    """What a rubric may set about its judge besides the model string and connection."""

    model_config = ConfigDict(extra="forbid")
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, gt=0)
    timeout: float | None = Field(default=None, gt=0)
    api_base: str | None = Field(default=None, description="Refused: use judge_connection")

    _timeout_cap = field_validator("timeout")(cap_timeout)
    _tokens_cap = field_validator("max_tokens")(cap_tokens)

    @field_validator("api_base")
    @classmethod
    def _moved(cls, value: str | None) -> None:
        if value:
            raise PydanticCustomError("api_base_moved", API_BASE_MOVED)
        return None


def judge_connection_resolve(*, team: Team, ref: Any) -> JudgeConnection | None:
    """The team's connection given as an instance, id or name (None/"" = the deployment's
    judge); a connection of another team, or none by that name, is an error on the field."""
    if ref in (None, ""):
        return None
    if isinstance(ref, JudgeConnection):
        found = ref if ref.team_id == team.pk else None
    else:
        found = judge_connection_get(team=team, ref=ref)
    if found is None:
        raise ValueError("no judge connection with this id or name in this team")
    return found


def judge_choice_errors(
    *, team: Team, rubric: Rubric | None, fields: dict[str, Any], out: dict[str, Any]
) -> dict[str, str]:
    """Check judge_connection and judge_model together (either may change alone), putting the
    resolved connection in ``out``; the errors by field."""
    if "judge_connection" in fields:
        try:
            out["judge_connection"] = judge_connection_resolve(
                team=team, ref=fields["judge_connection"]
            )
        except ValueError as exc:
            return {"judge_connection": str(exc)}
    connection = out.get("judge_connection", rubric.judge_connection if rubric else None)
    model = str(fields.get("judge_model", rubric.judge_model if rubric else "") or "").strip()
    if connection is None:
        problem = deployment_model_problem(model)
    elif model:
        problem = connection_route_problem(model, connection.api_base or None)
    else:
        problem = None
    return {"judge_model": problem} if problem else {}


def deployment_model_problem(model: str, *, api_base: str | None = None) -> str | None:
    """Why the deployment's judge must not be asked for ``model`` (None: it may). ``api_base``:
    the deployment judge's address the call would use (default EVALSITE_JUDGE_API_BASE)."""
    default = settings.EVALSITE_JUDGE_MODEL
    if not model or model == default:
        return None
    if model_provider(model) is None:  # checked on save, not first found when scoring
        return (
            f"litellm cannot tell the provider of {model!r}: use a litellm model string such "
            "as openai/gpt-4o-mini"
        )
    if not default:
        if api_base or settings.EVALSITE_JUDGE_API_BASE:
            return None  # every request goes to the operator's own server, whatever the name
        return (
            "this deployment has no default judge model, so a judge model needs a judge "
            f"connection: {CREATE_A_CONNECTION}"
        )
    provider = model_provider(model)
    if provider is None or provider != model_provider(default):
        return (
            f"without a judge connection the model must be of the deployment judge's provider "
            f"({model_provider(default) or default}); for another provider or endpoint, "
            f"{CREATE_A_CONNECTION}"
        )
    return None


# --- Freezing it on an evaluation ----------------------------------------------------------------


def judge_config_for(
    rubric: Rubric | None, *, model: str = "", prices: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The judge an evaluation is frozen with: model and parameters, the id of the rubric's
    judge connection when it has one (never a key: judge_for reads the key, and the connection's
    address, when the evaluation is judged), and the team's price for the model from
    ``prices`` (its judge price table) when it has one."""
    params = {k: v for k, v in (rubric.judge_params if rubric else {}).items() if v is not None}
    params.pop("api_base", None)  # rubrics no longer carry one (JudgeParams)
    connection = rubric.judge_connection if rubric else None
    config: dict[str, Any] = {"timeout": settings.EVALSITE_JUDGE_TIMEOUT}
    if connection is not None:
        config.update(connection.params)
        config["model"] = model or rubric.judge_model or connection.model  # type: ignore[union-attr]
        config["connection"] = str(connection.pk)
    else:
        chosen = model or (rubric.judge_model if rubric else "")
        config["model"] = chosen or settings.EVALSITE_JUDGE_MODEL
        # The deployment's own address, written by the server (teams never write this).
        config["api_base"] = settings.EVALSITE_JUDGE_API_BASE or None
    config.update(params)
    config.pop("price", None)  # the team's price table's alone, never a connection parameter
    if (price := price_for(prices, config["model"])) is not None:
        config["price"] = list(price)
    return config


# --- The judge an evaluation is sent to, built when it is judged ----------------------------------


class FrozenJudge(Protocol):
    """What judge_for reads of an evaluation (runs.models.Evaluation): its frozen judge config."""

    judge_config: Any


def judge_for(
    evaluation: FrozenJudge, connections: Mapping[str, JudgeConnection] | None = None
) -> JudgeConfig:
    """The judge for ``evaluation``. ``connections`` (by id, from one query for a group of
    claims) saves the lookup of the evaluation's connection."""
    config = dict(evaluation.judge_config)
    connection_id = config.pop("connection", None)
    frozen_base = config.pop("api_base", None)
    price = config.pop("price", None)
    legacy = config.pop(LEGACY_KEY, None)
    known = _capped(
        {k: config.pop(k) for k in ("temperature", "timeout", "max_tokens") if k in config}
    )
    if "max_completion_tokens" in config:
        config["max_completion_tokens"] = min(
            int(config["max_completion_tokens"]), settings.EVALSITE_JUDGE_MAX_TOKENS
        )
    base: dict[str, Any] = {
        "model": config.pop("model", "") or "",
        "transport": cast(Literal["auto", "litellm"], settings.EVALSITE_JUDGE_TRANSPORT),
        "extra": config,
        "price": tuple(price) if price else None,
        **known,
    }
    if connection_id:
        if connections is None:
            connections = judge_connections_by_id(ids=[connection_id])
        return _connection_judge(base, str(connection_id), connections.get(str(connection_id)))
    if legacy:
        return JudgeConfig(**base, unusable=LEGACY_BASE)
    return _deployment_judge(base, frozen_base)


def _capped(known: dict[str, Any]) -> dict[str, Any]:
    """Timeouts and token limits within the deployment's caps, whatever was frozen."""
    if known.get("timeout") is not None:
        known["timeout"] = min(float(known["timeout"]), settings.EVALSITE_JUDGE_MAX_TIMEOUT)
    if known.get("max_tokens") is not None:
        known["max_tokens"] = min(int(known["max_tokens"]), settings.EVALSITE_JUDGE_MAX_TOKENS)
    return known


def _deployment_judge(base: dict[str, Any], frozen_base: str | None) -> JudgeConfig:
    # Frozen by the server from EVALSITE_JUDGE_API_BASE when the evaluation was created: a
    # team cannot write it (rubrics no longer carry an api_base; the migration moved old ones).
    api_base = frozen_base or settings.EVALSITE_JUDGE_API_BASE or None
    if (problem := deployment_model_problem(base["model"], api_base=api_base)) is not None:
        return JudgeConfig(**base, unusable=problem)
    api_key = settings.EVALSITE_JUDGE_API_KEY or None
    if api_base and not api_key:
        api_key = "not-needed"  # local OpenAI-compatible servers accept any key
    return JudgeConfig(**base, api_base=api_base, api_key=api_key)


def _connection_judge(
    base: dict[str, Any], connection_id: str, connection: JudgeConnection | None
) -> JudgeConfig:
    if connection is None:
        return JudgeConfig(**base, connection=connection_id, unusable=DELETED)
    api_base = connection.api_base or None
    problem = connection_route_problem(base["model"], api_base)
    api_key = NO_KEY
    if connection.key_ciphertext and problem is None:
        try:
            api_key = secret_decrypt(connection.key_ciphertext)
        except SecretUnreadable as exc:
            problem = f"judge connection {connection.name!r}: {exc}; an owner must enter it again"
    if problem is not None:
        return JudgeConfig(**base, connection=connection_id, unusable=problem)
    return JudgeConfig(
        **base,
        api_base=api_base,
        api_key=api_key,
        connection=connection_id,
        address_guard=bool(api_base) and outbound_guarded(Purpose.JUDGE),
    )
