"""Model facts a judge call depends on: whether the model takes a JSON schema, and its price.

Cached per model: litellm's lookups are slow for models it does not know. ``tokens_cost`` is
the one price of tokens: a judge call's cost, a re-score's or comparison's estimate, and so
every sum of costs (batch pages, home charts, exports) come from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import llm
from .types import JudgeConfig

_schema_support: dict[str, bool] = {}
_priced: dict[str, bool] = {}

CUSTOM_PRICE_KEYS = ("input_cost_per_token", "output_cost_per_token")
# For a model litellm has no price for, it still tries to price every answer, failing through a
# slow search of its price map (about a tenth of a call's CPU). A zero per-call price (a litellm
# feature) short-cuts that; we report such calls' cost as unknown (None) all the same.
ZERO_PRICE = dict.fromkeys(CUSTOM_PRICE_KEYS, 0.0)


def uses_json_schema(config: JudgeConfig) -> bool:
    """json_schema unless "auto" and litellm knows the model and knows it lacks schema support."""
    if config.structured_output != "auto":
        return config.structured_output == "json_schema"
    if config.model not in _schema_support:
        known = llm.model_info(config.model) is not None
        lacks = known and llm.lacks_response_schema(config.model)
        _schema_support[config.model] = not lacks
    return _schema_support[config.model]


def _is_priced(model: str) -> bool:
    if model not in _priced:
        info = llm.model_info(model) or {}
        _priced[model] = info.get("input_cost_per_token") is not None
    return _priced[model]


def has_custom_price(config: JudgeConfig) -> bool:
    return any(k in config.extra for k in CUSTOM_PRICE_KEYS)


def unpriced(config: JudgeConfig) -> bool:
    """Neither litellm's map nor the judge's `extra` gives this model a price."""
    return not (has_custom_price(config) or _is_priced(config.model))


Price = tuple[float, float]  # USD per million input tokens, per million output tokens


def price_for(prices: Mapping[str, Any] | None, model: str) -> Price | None:
    """A team's price for ``model`` from its table ({model: {"input", "output"}}), or None."""
    entry = (prices or {}).get(model)
    if not isinstance(entry, Mapping):
        return None
    return float(entry["input"]), float(entry["output"])


def tokens_cost(
    model: str, prompt_tokens: int, completion_tokens: int, price: Price | None = None
) -> float | None:
    """USD for these tokens: at ``price`` (the team's) when given, else at litellm's price of
    the model, else None: unknown, never 0."""
    if price is not None:
        return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000
    if not _is_priced(model):
        return None
    try:
        return llm.token_cost(model, prompt_tokens, completion_tokens)
    except Exception:  # noqa: BLE001 - a price lookup must never fail a verdict
        return None


def call_cost(
    config: JudgeConfig, response: Any, prompt_tokens: int | None, completion_tokens: int | None
) -> float | None:
    """USD cost at the team's price (``config.price``), else when litellm knows the price (its
    map, or prices given in `extra`), else None. `response` is litellm's response object, None
    for the direct transport."""
    if config.price is not None:
        return tokens_cost(config.model, prompt_tokens or 0, completion_tokens or 0, config.price)
    custom = has_custom_price(config)
    if not (custom or _is_priced(config.model)):
        return None
    known = llm.response_cost(response)
    if isinstance(known, int | float) or custom:
        return float(known) if isinstance(known, int | float) else None
    try:
        return llm.token_cost(config.model, prompt_tokens or 0, completion_tokens or 0)
    except Exception:  # noqa: BLE001 - a price lookup must never fail a verdict
        return None
