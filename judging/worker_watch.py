"""A worker's heartbeat says "consuming", and a worker that cannot consume again exits.

``ConsumerWatch`` is a bootstep of Celery's consumer: Celery starts it each time the consumer
has (re)connected and its task consumer is set up, and stops it when the connection is lost.
While started, a timer entry of the consumer's own event loop ticks every second. A thread
(``Watch``) then:

- renews this process's entry in the fair-share ledger (judging.fair_ledger) and hands parked
  evaluations back to the broker when other worker processes could take them;
- stamps the heartbeat (judging.liveness) only while the consumer is started and its loop ticked
  lately, so the stamp stops the moment the worker stops consuming, whatever the reason (broker
  gone, consumer crashed, loop blocked, shutdown);
- exits the process (``os._exit(EXIT_STALLED)``, after logging) when the consumer has not
  consumed for EVALSITE_WORKER_STALL_SECONDS although the broker answers: the worker could not
  heal in-process (kombu's ``restore_unacked`` crash after a Redis outage leaves a process that
  never consumes again), so its supervisor must start a fresh one. While the broker does not
  answer, Celery's own reconnect loop is the right place to wait;
- exits the same way when a shutdown (SIGTERM, or Celery's own "Unrecoverable error") has not
  ended after EVALSITE_WORKER_STOP_SECONDS: SIGTERM always stops the worker.

While consuming it also notices a Redis broker that lost its data (a restart without
persistence) and sends every queued evaluation again at once rather than after
EVALSITE_REQUEUE_AFTER (the sweeper's guess that a message was lost). A copy that was not lost
is a harmless duplicate: claims are compare-and-set, so every evaluation is judged once.
Evaluations whose send failed during the outage are sent by the sweeper (every
EVALSITE_SWEEP_INTERVAL).

The database counts too: the stamp needs a query to pass (a worker without its database cannot
work), and once the database answers again after a restart the evaluations this process had in
hand when it went away are given back at once (judging.services.stranded), not after the sweeper's
EVALSITE_REQUEUE_AFTER or their lease.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import redis
from celery import bootsteps
from django.conf import settings
from django.db import Error, close_old_connections, connection

from judging import liveness

logger = logging.getLogger(__name__)

EXIT_STALLED = 70  # EX_SOFTWARE: "restart me"; Celery's own fatal errors exit with 1
TICK_SECONDS = 1.0


class Watch:
    """What the consumer did lately, and the thread that acts on it (one per process)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.consuming = False
        self.last_tick: float | None = None  # monotonic
        self.not_consuming_since = time.monotonic()
        self.stopping_since: float | None = None
        self.answering_since: float | None = None  # the broker answered ever since (not consuming)
        self.thread: threading.Thread | None = None

    # --- called from the consumer's bootstep and signals ----------------------------------

    def started(self) -> bool:
        """The consumer consumes (again); whether it had before (a reconnect)."""
        with self.lock:
            again = self.last_tick is not None
            self.consuming, self.last_tick = True, time.monotonic()
        return again

    def tick(self) -> None:
        with self.lock:
            self.last_tick = time.monotonic()

    def stopped(self) -> None:
        with self.lock:
            if self.consuming:
                self.consuming, self.not_consuming_since = False, time.monotonic()

    def stopping(self) -> None:
        with self.lock:
            if self.stopping_since is None:
                self.stopping_since = time.monotonic()

    # --- the watching thread ----------------------------------------------------------------

    def is_consuming(self, now: float) -> bool:
        """Started and its loop ticked within a few ticks (a blocked loop consumes nothing)."""
        with self.lock:
            fresh = self.last_tick is not None and now - self.last_tick < 3 * TICK_SECONDS + 1
            if self.consuming and not fresh:
                self.consuming, self.not_consuming_since = False, self.last_tick or now
            return self.consuming and fresh

    def start_thread(self) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name="worker-watch", daemon=True)
            self.thread.start()

    def _run(self) -> None:
        interval = settings.EVALSITE_WORKER_BEAT_SECONDS
        while True:
            self.check(time.monotonic())
            time.sleep(interval)

    def check(self, now: float) -> None:
        with self.lock:
            stopping_since = self.stopping_since
        if stopping_since is not None:
            if now - stopping_since > settings.EVALSITE_WORKER_STOP_SECONDS:
                _exit("the worker did not stop within EVALSITE_WORKER_STOP_SECONDS")
            return
        consuming = self.is_consuming(now)
        _fair_tick(consuming)
        if consuming:
            self.answering_since = None
            if database_answers():
                _stamp()
                _hand_back_stranded()
            _resend_lost()
            return
        if not broker_answers():
            self.answering_since = None  # an outage: Celery reconnects once the broker is back
            return
        # Counted from when the broker answers again, not from the loss: Celery's reconnect
        # backoff (at most 30 s) must get its chance first.
        if self.answering_since is None:
            self.answering_since = now
        stalled = now - max(self.answering_since, self.not_consuming_since)
        if stalled > settings.EVALSITE_WORKER_STALL_SECONDS:
            _exit(f"the broker has answered for {stalled:.0f} s but the consumer does not consume")


def _stamp() -> None:
    try:
        liveness.worker_beat()
    except (redis.RedisError, OSError):
        logger.warning("could not stamp the worker heartbeat", exc_info=True)


def _fair_tick(consuming: bool) -> None:
    # Imported here: this module is imported by evalsite/celery.py before Django is set up.
    from . import fair_ledger

    try:
        fair_ledger.tick(consuming=consuming)
    except Exception:  # noqa: BLE001 - the ledger is repaired at the next beat
        logger.warning("could not renew the fair-share ledger", exc_info=True)


def _resend_lost() -> None:
    try:
        _resend_if_broker_lost_data()
    except Exception:  # noqa: BLE001 - the sweeper resends them later anyway
        logger.warning("could not check the broker for lost messages", exc_info=True)
    finally:
        close_old_connections()


def database_answers() -> bool:
    """This thread's database connection takes a query (opened again if it broke; bounded by
    EVALSITE_DB_CONNECT_TIMEOUT). A worker without its database cannot work: no stamp."""
    try:
        close_old_connections()
        connection.ensure_connection()
        if connection.is_usable():
            return True
    except Error:
        pass
    with contextlib.suppress(Error):
        connection.close()  # is_usable() leaves a broken connection open: open a fresh one next
    return False


def _hand_back_stranded() -> None:
    # Imported here: this module is imported by evalsite/celery.py before Django is set up.
    from .services.stranded import evaluations_hand_back_stranded

    try:
        evaluations_hand_back_stranded()
    except Exception:  # noqa: BLE001 - kept, and tried again at the next beat
        logger.warning(
            "could not give back the evaluations the database interrupted", exc_info=True
        )


def _exit(why: str) -> None:
    logger.critical("%s: exiting with status %d so a fresh worker starts", why, EXIT_STALLED)
    logging.shutdown()  # flush every handler: os._exit skips that
    os._exit(EXIT_STALLED)


def broker_answers() -> bool:
    """True when the broker is there: a Redis server replies to PING (an error reply counts:
    something answers), a filesystem broker's folder exists."""
    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://")):
        return Path(settings.BROKER_DIR).is_dir()
    client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
    try:
        client.ping()
    except (redis.AuthenticationError, redis.exceptions.AuthorizationError):
        return True  # redis-py files these under ConnectionError, but the server replied
    except (redis.ConnectionError, redis.TimeoutError):
        return False
    except redis.RedisError:
        return True
    finally:
        client.close()
    return True


watch = Watch()


class ConsumerWatch(bootsteps.StartStopStep):
    """Ties the watch to the consumer: started once the consumer consumes (after each
    reconnect), stopped when its connection goes."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.entry: Any = None

    def start(self, parent: Any) -> None:
        if watch.started():
            logger.info("consuming again after a lost broker connection")
        self.entry = parent.timer.call_repeatedly(TICK_SECONDS, watch.tick)
        watch.start_thread()

    def stop(self, parent: Any) -> None:
        watch.stopped()
        if self.entry is not None:
            self.entry.cancel()
            self.entry = None

    shutdown = stop


def _resend_if_broker_lost_data() -> None:
    """A Redis broker holds a marker key next to the messages; when it is gone, so are the
    messages (a restart without persistence, a flush): the first worker to see that puts the
    marker back and sends every queued evaluation again, instead of waiting
    EVALSITE_REQUEUE_AFTER for the sweeper. A broker that kept its data kept the marker."""
    # Imported here: this module is imported by evalsite/celery.py before Django is set up.
    from .services.sweep import evaluations_resend_after_outage

    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://")):
        return
    client = _broker_client(url)
    key = f"evalsite:broker-holds:{settings.CELERY_TASK_DEFAULT_QUEUE}"
    if client.exists(key) or not client.set(key, repr(time.time()), nx=True):
        return
    sent = evaluations_resend_after_outage(before=time.time())
    if sent:
        logger.warning("the broker lost its messages: sent %d queued evaluation(s) again", sent)


_broker_clients: dict[str, redis.Redis] = {}


def _broker_client(url: str) -> redis.Redis:
    if url not in _broker_clients:
        _broker_clients[url] = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
    return _broker_clients[url]
