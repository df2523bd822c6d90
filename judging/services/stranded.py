"""Evaluations a worker had in hand when its database went away, given back once it answers.

A unit of work (a message's evaluations, judging.services.fair) that fails with a database error
(a PostgreSQL restart) has had its broker message acknowledged: the broker will not send it
again. A claim that committed leaves its evaluations ``running`` under this process's lease
token, one that did not leaves them ``queued`` with a send time; on their own the sweeper finds
them after EVALSITE_LEASE_SECONDS or EVALSITE_REQUEUE_AFTER. So each worker process remembers
them here (ids with the tokens of the claims it tried) and its watch thread
(judging.worker_watch) hands them back as soon as the database answers: ``running`` under one of
those tokens → ``queued`` (the attempt not counted), then every one still ``queued`` is sent
again. Compare-and-set throughout: an evaluation whose result did commit, or that another
worker claimed meanwhile, is left alone; a copy of a message the broker still holds claims
nothing. Nothing is judged twice.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F, Q
from django.utils import timezone

from runs.models import Evaluation, Status
from runs.services.evaluations import evaluations_publish
from runs.services.run_state import runs_refresh

logger = logging.getLogger(__name__)

# What a database that went away raises (refused, terminated, "starting up", closed).
DATABASE_AWAY = (OperationalError, InterfaceError)


class Stranded:
    """Per process: the evaluations in hand with the tokens of the claims tried for them, and
    those the database stranded. Only evaluations in hand are followed (a worker's units of
    work), so a web process judging inline keeps nothing here."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_hand: dict[str, tuple[int, set[uuid.UUID]]] = {}  # id -> (holders, tokens)
        self.stranded: dict[str, set[uuid.UUID]] = {}  # lost to the database: id -> tokens

    def hold(self, ids: list[str]) -> None:
        with self.lock:
            for i in ids:
                holders, tokens = self.in_hand.get(i, (0, set()))
                self.in_hand[i] = (holders + 1, tokens)

    def claiming(self, token: uuid.UUID, ids: list[str]) -> None:
        """Before a claim's transaction: its commit may be lost with the connection."""
        with self.lock:
            for i in ids:
                if i in self.in_hand:
                    self.in_hand[i][1].add(token)

    def done(self, ids: list[str], *, lost: bool) -> None:
        with self.lock:
            for i in ids:
                holders, tokens = self.in_hand.pop(i, (1, set()))
                if holders > 1:  # a duplicate message's unit still holds it
                    self.in_hand[i] = (holders - 1, tokens)
                if lost:
                    self.stranded.setdefault(i, set()).update(tokens)

    def take(self) -> dict[str, set[uuid.UUID]]:
        with self.lock:
            taken, self.stranded = self.stranded, {}
        return taken

    def put_back(self, taken: dict[str, set[uuid.UUID]]) -> None:
        with self.lock:
            for i, tokens in taken.items():
                self.stranded.setdefault(i, set()).update(tokens)


stranded = Stranded()


@contextmanager
def evaluations_in_hand(ids: list[str]) -> Iterator[None]:
    """Around a unit of work: its evaluations are stranded if a database error ends it."""
    ids = [str(i) for i in ids]
    stranded.hold(ids)
    try:
        yield
    except DATABASE_AWAY:
        stranded.done(ids, lost=True)
        raise
    except BaseException:
        stranded.done(ids, lost=False)
        raise
    stranded.done(ids, lost=False)


def evaluations_hand_back_stranded() -> int:
    """Give back what this process had in hand when the database went away: claims of its
    own → queued, then every one of them still queued sent again. The number sent. Raises
    the database's error (and keeps them) while it does not answer."""
    taken = stranded.take()
    if not taken:
        return 0
    try:
        return _hand_back(taken)
    except BaseException:
        stranded.put_back(taken)
        raise


def _hand_back(taken: dict[str, set[uuid.UUID]]) -> int:
    by_token: dict[uuid.UUID, list[str]] = {}
    for i, tokens in taken.items():
        for token in tokens:
            by_token.setdefault(token, []).append(i)
    with transaction.atomic():
        for token, ids in by_token.items():
            Evaluation.objects.filter(id__in=ids, status=Status.RUNNING, lease_token=token).update(
                status=Status.QUEUED,
                attempts=F("attempts") - 1,
                lease_token=None,
                lease_expires_at=None,
                started_at=None,
            )
        # A deferred one (not_before ahead) has its own delayed message, or the sweeper's.
        ready = Q(not_before__isnull=True) | Q(not_before__lte=timezone.now())
        rows = list(
            Evaluation.objects.filter(ready, id__in=list(taken), status=Status.QUEUED, held=False)
            .order_by("created_at")
            .values_list("id", "run_id", "run__rubric_id")
        )
        if rows:
            runs_refresh({run_id: rubric_id for _, run_id, rubric_id in rows})
    sent = evaluations_publish([str(i) for i, _, _ in rows]) if rows else 0
    logger.warning("the database is back: sent %d evaluation(s) it had interrupted again", sent)
    return sent
