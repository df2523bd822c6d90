"""One asyncio loop per process, in a daemon thread, for every judge call.

Celery runs tasks in a thread pool; each thread hands its scoring coroutine to this loop and
blocks on the result. All judge calls of the process therefore share one loop and one pool of
HTTP connections, so many calls stay in flight at little CPU cost per call.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

from runs.scoring import direct
from runs.scoring.judge import limit_calls_in_flight

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _start() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    direct.enable(loop)  # process-long: judge calls to OpenAI-compatible servers skip litellm
    thread = threading.Thread(target=loop.run_forever, name="judge-loop", daemon=True)
    thread.start()
    return loop


def _stop() -> None:
    """At exit: close the loop's HTTP connections before the interpreter tears down."""
    loop = _loop
    if loop is None or loop.is_closed() or not loop.is_running():
        return
    with contextlib.suppress(Exception):  # exiting anyway
        asyncio.run_coroutine_threadsafe(direct.close(), loop).result(5)
    loop.call_soon_threadsafe(loop.stop)


atexit.register(_stop)


_limit: int | None = None
_held = threading.Condition()
_holding = 0


def limit_calls(limit: int | None) -> None:
    """Keep at most ``limit`` judge calls of this process in flight (None: no limit), and at
    most twice that many evaluations claimed and not yet written.

    A worker sets it to its concurrency: a broker message may carry several evaluations,
    so threads alone no longer bound the calls in flight. The claim bound keeps a claimed
    evaluation from waiting for a judge slot longer than about one judge call, well inside
    its lease."""
    global _limit
    _limit = limit if limit and limit > 0 else None
    limit_calls_in_flight(_limit)


@contextlib.contextmanager
def claim_room(wanted: int) -> Iterator[int]:
    """Block until the process may claim ``wanted`` more evaluations; yields how many it may
    claim (fewer when ``wanted`` alone exceeds the bound) and gives the room back on exit."""
    global _holding
    if _limit is None or wanted <= 0:
        yield wanted
        return
    room = min(wanted, 2 * _limit)
    with _held:
        while _holding + room > 2 * _limit:
            _held.wait()
        _holding += room
    try:
        yield room
    finally:
        with _held:
            _holding -= room
            _held.notify_all()


def judge_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            _loop = _start()
        return _loop


def run_judged(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coro`` on the shared loop and wait for its result (re-raising its exception)."""
    future = asyncio.run_coroutine_threadsafe(coro, judge_loop())
    try:
        return future.result(timeout)
    except TimeoutError:
        future.cancel()
        raise
