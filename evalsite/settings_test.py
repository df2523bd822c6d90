"""Settings for the test suite: the normal settings, isolated per test session.

Each pytest session gets its own id (inherited by the worker processes it starts), and with it
its own data folder (SQLite file, filesystem broker), its own PostgreSQL test database and its
own Celery queue, so concurrent test sessions — or a dashboard running on the same checkout —
never share state. DATABASE_URL and CELERY_BROKER_URL still come from the environment (CI sets
PostgreSQL and Redis).
"""

import os
import shutil
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

_ROOT = Path(__file__).resolve().parent.parent / ".testdata"


def _isolate_xdist_worker(worker: str) -> None:
    """Under pytest-xdist each worker process (gw0, gw1, …) is a test session of its own: its
    run id, data folder and (on Redis) database number get the worker's suffix, once. The
    processes it starts inherit the result (EVALSITE_TEST_XDIST says it is applied)."""
    if os.environ.get("EVALSITE_TEST_XDIST") == worker:
        return
    os.environ["EVALSITE_TEST_XDIST"] = worker
    base = os.environ.get("EVALSITE_TEST_RUN_ID") or str(os.getppid())
    os.environ["EVALSITE_TEST_RUN_ID"] = f"{base}_{worker}"
    data = os.environ.get("EVALSITE_DATA_DIR") or str(_ROOT / base)
    os.environ["EVALSITE_DATA_DIR"] = os.path.join(data, worker)
    broker = os.environ.get("CELERY_BROKER_URL", "")
    if broker.startswith(("redis://", "rediss://")):
        # Rate-limit buckets and notifications use fixed key names: one database per worker.
        url = urlsplit(broker)
        db = url.path.strip("/")
        number = (int(db) if db.isdigit() else 0) + int(worker.removeprefix("gw"))
        if number > 15:
            raise RuntimeError(f"{broker}: too many xdist workers for Redis databases 0-15")
        os.environ["CELERY_BROKER_URL"] = urlunsplit(url._replace(path=f"/{number}"))


if os.environ.get("PYTEST_XDIST_WORKER"):
    _isolate_xdist_worker(os.environ["PYTEST_XDIST_WORKER"])
RUN_ID = os.environ.setdefault("EVALSITE_TEST_RUN_ID", str(os.getpid()))
# Test receivers listen on 127.0.0.1; the guard's own tests switch this off again.
os.environ.setdefault("EVALSITE_WEBHOOK_ALLOW_PRIVATE", "1")
os.environ.setdefault("EVALSITE_DATA_DIR", str(_ROOT / RUN_ID))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Every test client is 127.0.0.1, and the tests that send revoked or malformed API keys add
# up: they must not lock the suite's one address out (tests of the limit set their own).
os.environ.setdefault("EVALSITE_LOGIN_MAX_ATTEMPTS_PER_IP", "100000")
# As before DEBUG became opt-in: the suite (and the workers it starts) runs with the development
# settings (development key, plain static storage, cookies over http for the live server).
if not os.environ.get("SECRET_KEY"):
    os.environ.setdefault("DEBUG", "1")


def _remove_stale_sessions() -> None:
    """Drop data folders of test sessions whose process is gone."""
    if not _ROOT.is_dir():
        return
    for folder in _ROOT.iterdir():
        if folder.name.isdigit() and folder.name != RUN_ID:
            try:
                os.kill(int(folder.name), 0)
            except ProcessLookupError:
                shutil.rmtree(folder, ignore_errors=True)
            except PermissionError:
                pass


if str(os.getpid()) == RUN_ID:
    _remove_stale_sessions()

from .settings import *  # noqa: E402,F403
from .settings import DATABASES, task_lanes  # noqa: E402

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast test users
CELERY_TASK_DEFAULT_QUEUE = f"evalsite-test-{RUN_ID}"
CELERY_TASK_QUEUES = task_lanes(CELERY_TASK_DEFAULT_QUEUE)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["TEST"] = {
        "NAME": os.path.join(os.environ["EVALSITE_DATA_DIR"], "test.sqlite3")
    }
else:
    DATABASES["default"]["TEST"] = {"NAME": f"test_evalsite_{RUN_ID}"}
