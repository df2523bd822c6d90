"""The judge an evaluation is sent to, built when it is judged from its frozen judge config.

Where requests go (docs/security.md): an evaluation frozen with a judge connection goes to the
connection's api_base (or its provider's default endpoint) with the connection's own key, read
and decrypted now, or with no key; one without goes to the deployment's judge
(EVALSITE_JUDGE_API_BASE, or the provider default of EVALSITE_JUDGE_MODEL), the only judge
that ever gets EVALSITE_JUDGE_API_KEY. A judge that must not be called (deleted connection,
unreadable key, a model of another provider) comes back with ``unusable`` set: the engine
fails its calls with that permanent error before sending anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from django.conf import settings

from runs.scoring import JudgeConfig
from runs.scoring.judge import connection_route_problem
from teams.crypto import SecretUnreadable, secret_decrypt
from teams.judging import deployment_model_problem
from teams.models import JudgeConnection
from teams.selectors import judge_connections_by_id

from ..models import Evaluation

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


def judge_for(
    evaluation: Evaluation, connections: Mapping[str, JudgeConnection] | None = None
) -> JudgeConfig:
    """The judge for ``evaluation``. ``connections`` (by id, from one query for a group of
    claims) saves the lookup of the evaluation's connection."""
    config = dict(evaluation.judge_config)
    connection_id = config.pop("connection", None)
    frozen_base = config.pop("api_base", None)
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
        address_guard=bool(api_base) and not settings.EVALSITE_JUDGE_ALLOW_PRIVATE,
    )
