"""A team's judge prices and re-score confirmation thresholds, as written: validation.

Prices are USD per million tokens, input and output, per litellm model string; they override
litellm's price table wherever a cost is computed (judge_engine.pricing.tokens_cost).
"""

from __future__ import annotations

import math
from typing import Any

MAX_PRICED_MODELS = 200
MAX_PRICE = 1_000_000.0  # USD per million tokens: far above any real model's
MAX_TOKEN_THRESHOLD = 10**15


def _price(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def judge_prices_clean(value: Any) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """The price table cleaned ({model: {"input", "output"}}) and errors by field
    (``judge_prices``, ``judge_prices.<model>.input``...)."""
    if value is None:
        return {}, {}
    if problem := _table_problem(value):
        return {}, {"judge_prices": problem}
    errors: dict[str, str] = {}
    out: dict[str, dict[str, float]] = {}
    for model, entry in value.items():
        prices, entry_errors = _entry_clean(f"judge_prices.{model}", model, entry)
        errors.update(entry_errors)
        if not entry_errors:
            out[model] = prices
    return out, errors


def _table_problem(value: Any) -> str:
    if not isinstance(value, dict):
        return 'must be an object: {"<model>": {"input": 0.15, "output": 0.6}}'
    if len(value) > MAX_PRICED_MODELS:
        return f"at most {MAX_PRICED_MODELS} models"
    return ""


def _entry_clean(field: str, model: str, entry: Any) -> tuple[dict[str, float], dict[str, str]]:
    """One model's prices and the errors under ``field`` (the entry) or ``field.<side>``."""
    if not model or len(model) > 200 or any(ch.isspace() or ch == "\x00" for ch in model):
        return {}, {field: "a litellm model string (no spaces, at most 200 characters)"}
    if not isinstance(entry, dict) or set(entry) != {"input", "output"}:
        return {}, {field: 'must be {"input": <USD per million>, "output": <USD per million>}'}
    prices = {side: _price(entry[side]) for side in ("input", "output")}
    errors = {
        f"{field}.{side}": problem
        for side, price in prices.items()
        if (problem := _price_problem(price))
    }
    return {side: p for side, p in prices.items() if p is not None}, errors


def _price_problem(price: float | None) -> str:
    if price is None or not math.isfinite(price):
        return "must be a number of USD per million tokens"
    if not 0 <= price <= MAX_PRICE:
        return f"must be between 0 and {MAX_PRICE:,.0f}"
    return ""


def token_threshold_error(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        return "must be a whole number of tokens"
    if not 0 <= value <= MAX_TOKEN_THRESHOLD:
        return f"must be between 0 and {MAX_TOKEN_THRESHOLD:,}"
    return ""
