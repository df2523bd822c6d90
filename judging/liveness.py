"""Whether a worker is consuming: every worker process stamps the time every few seconds while
its consumer consumes (judging/worker_watch.py), and a web process asks how long ago the last stamp
was (EVALSITE_SCORE_INLINE_WHEN_NO_WORKER).

The stamp lives where the rate limiters keep their buckets: in Redis with a Redis broker (every
worker of the deployment, one key per queue), else in a file under the data folder (every worker
of this machine, which is the whole embedded stack). One SET or one file touch every few
seconds: nothing a worker would notice.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

KEEP_SECONDS = 86_400  # a Redis stamp older than this is gone: "never seen"


def _redis_url() -> str:
    for url in (settings.EVALSITE_RATELIMIT_URL, settings.CELERY_BROKER_URL):
        if url and url.startswith(("redis://", "rediss://")):
            return url
    return ""


def _key() -> str:
    return f"evalsite:worker-seen:{settings.CELERY_TASK_DEFAULT_QUEUE}"


def _path() -> Path:
    return Path(settings.DATA_DIR) / f"worker-seen-{settings.CELERY_TASK_DEFAULT_QUEUE}"


_clients: dict[str, redis.Redis] = {}


def _redis() -> redis.Redis:
    url = _redis_url()
    if url not in _clients:
        _clients[url] = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
    return _clients[url]


def worker_beat() -> None:
    """Stamp now as the last time a worker was seen."""
    now = time.time()
    if _redis_url():
        _redis().set(_key(), repr(now), ex=KEEP_SECONDS)
        return
    path = _path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    os.utime(path, (now, now))


def worker_last_seen() -> float | None:
    """The last stamp (seconds since the epoch), None when no worker was ever seen."""
    if _redis_url():
        raw = _redis().get(_key())
        return float(raw) if raw is not None else None
    try:
        return _path().stat().st_mtime
    except FileNotFoundError:
        return None


def worker_missing_for(seconds: float) -> bool:
    """True when no worker has stamped for ``seconds``. A store that cannot be read answers
    False (logged): the web process then leaves the judging to the workers, as by default."""
    try:
        seen = worker_last_seen()
    except (redis.RedisError, OSError):
        logger.warning(
            "cannot read the worker heartbeat; assuming a worker is there", exc_info=True
        )
        return False
    return seen is None or time.time() - seen > seconds
