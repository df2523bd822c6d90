"""The Celery app: `celery -A evalsite worker` runs the judge workers."""

import gc
import os

from celery import Celery, signals

from judging.worker_watch import ConsumerWatch, watch

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

app = Celery("evalsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The heartbeat follows the consumer, and a worker that cannot consume again exits.
app.steps["consumer"].add(ConsumerWatch)


@signals.worker_init.connect
def _limit_judge_calls(sender: object = None, **_: object) -> None:
    """At most --concurrency judge calls in flight per worker process, also when messages
    carry several evaluations each (runs.tasks.evaluate_many); those calls, the claimed
    evaluations and the worker's threads shared fairly between teams (calls and claims across
    every worker process with Redis: judging.fair_ledger)."""
    # Imported late, here and below: this module is imported by evalsite/__init__.py, before
    # Django's settings and apps are ready; these handlers run in a started worker.
    from django.conf import settings

    from judging import fair_ledger
    from judging.fair_worker import share_threads
    from judging.judge_runtime import limit_calls

    concurrency = getattr(sender, "concurrency", None)
    # With Redis, calls and claims are shared between every worker process (the ledger).
    limit_calls(concurrency, fair_ledger.start() if concurrency else None)
    share_threads(concurrency, settings.EVALSITE_FAIR_RESERVE)


@signals.worker_shutting_down.connect
def _hand_back_parked(**_: object) -> None:
    """Evaluations parked for a team's turn go back to the broker rather than wait for the
    sweeper (judging.fair_worker). The shutdown is bounded (judging.worker_watch)."""
    from judging import fair_worker
    from runs.services.evaluations import evaluations_publish

    watch.stopping()
    ids = fair_worker.close()
    if ids:
        evaluations_publish(ids)


@signals.worker_ready.connect
def _freeze_startup_objects(**_: object) -> None:
    """Move everything allocated at start-up out of the garbage collector's reach.

    Importing litellm leaves ~400k tracked objects; every full collection then walks them all
    and stalls the judge event loop (and every call in flight) for ~0.3 s. Frozen, a full
    collection costs ~20 ms. bench/judge_overhead.py --gc-freeze shows the effect.
    """
    gc.collect()
    gc.freeze()


@signals.worker_ready.connect
def _report_ready(**_: object) -> None:
    """With EVALSITE_WORKER_READY_FILE set, write it once the worker consumes: bench/throughput
    starts its clock then, not after a guessed delay."""
    path = os.environ.get("EVALSITE_WORKER_READY_FILE")
    if path:
        with open(path, "w") as f:
            f.write(str(os.getpid()))
