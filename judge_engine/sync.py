"""Running a scorer from synchronous code."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(make_coro: Callable[[], Coroutine[Any, Any, T]], scorer: str) -> T:
    """Run the coroutine on a fresh event loop; refuse inside a running loop (it would block it)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make_coro())
    raise RuntimeError(
        f"{scorer}.score() cannot run inside a running event loop; "
        f"use `await {scorer}.ascore(...)` there instead"
    )


def checked_scale(scale: Any) -> float:
    """A scale is a finite number >= 0; 0 is legal and is kept (the reference turns it into 1)."""
    if isinstance(scale, bool) or not isinstance(scale, int | float) or not math.isfinite(scale):
        raise ValueError(f"scale must be a finite number, got {scale!r}")
    if scale < 0:
        raise ValueError(f"scale must be zero or more, got {scale!r}")
    return float(scale)
