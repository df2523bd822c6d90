"""A team's judge prices and re-score confirmation thresholds, as written: validation.

Prices are USD per million tokens, input and output, per litellm model string; they override
litellm's price table wherever a cost is computed (runs.scoring.pricing.tokens_cost).
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
    if not isinstance(value, dict):
        return {}, {
            "judge_prices": 'must be an object: {"<model>": {"input": 0.15, "output": 0.6}}'
        }
    if len(value) > MAX_PRICED_MODELS:
        return {}, {"judge_prices": f"at most {MAX_PRICED_MODELS} models"}
    errors: dict[str, str] = {}
    out: dict[str, dict[str, float]] = {}
    for model, entry in value.items():
        field = f"judge_prices.{model}"
        if not model or len(model) > 200 or any(ch.isspace() or ch == "\x00" for ch in model):
            errors[field] = "a litellm model string (no spaces, at most 200 characters)"
            continue
        if not isinstance(entry, dict) or set(entry) != {"input", "output"}:
            errors[field] = 'must be {"input": <USD per million>, "output": <USD per million>}'
            continue
        prices = {side: _price(entry[side]) for side in ("input", "output")}
        for side, price in prices.items():
            if price is None or not math.isfinite(price):
                errors[f"{field}.{side}"] = "must be a number of USD per million tokens"
            elif not 0 <= price <= MAX_PRICE:
                errors[f"{field}.{side}"] = f"must be between 0 and {MAX_PRICE:,.0f}"
        if not any(k.startswith(field + ".") for k in errors):
            out[model] = {side: float(p) for side, p in prices.items() if p is not None}
    return out, errors


def token_threshold_error(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        return "must be a whole number of tokens"
    if not 0 <= value <= MAX_TOKEN_THRESHOLD:
        return f"must be between 0 and {MAX_TOKEN_THRESHOLD:,}"
    return ""
