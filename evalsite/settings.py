"""evalsite settings: everything comes from the environment, with defaults that work locally.

Locally (no variables set) the site runs on a SQLite file and a filesystem Celery broker under
``EVALSITE_DATA_DIR`` (default ``./data``): nothing to install. Production sets ``DATABASE_URL``
(PostgreSQL), ``CELERY_BROKER_URL`` (Redis), ``SECRET_KEY`` and ``ALLOWED_HOSTS``; ``DEBUG`` is off
unless ``DEBUG=1`` (``make run`` and the test settings set it).
"""

import os
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

from evalsite.dbsettings import postgres_settings

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("EVALSITE_DATA_DIR", BASE_DIR / "data")).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    return float(value) if value not in (None, "") else default


# Off unless the environment asks (DEBUG=1): `make run` (scripts/run) and the test settings do.
DEBUG = env_bool("DEBUG", default=False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set SECRET_KEY in production, or DEBUG=1 for local "
            "development (make run does) to use a development key."
        )
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"  # noqa: S105

ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h.strip()]
if DEBUG and not ALLOWED_HOSTS:
    ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]", "testserver"]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # Before staticfiles: its runserver (static files and chunked request bodies) wins.
    "evalsite",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "template_partials",
    "ninja",
    "teams",
    "rubrics",
    "runs",
    "judging",
    "reviews",
]

MIDDLEWARE = [
    "evalsite.health.HealthCheckMiddleware",  # first: /healthz reads no Host, session or user
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "teams.middleware.CurrentTeamMiddleware",
]

ROOT_URLCONF = "evalsite.urls"
WSGI_APPLICATION = "evalsite.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "teams.context_processors.current_team",
            ],
        },
    }
]

# --- Database -------------------------------------------------------------------------------
DATABASE_URL = os.environ.get("DATABASE_URL") or f"sqlite:///{DATA_DIR / 'evalsite.sqlite3'}"
DATABASES: dict[str, dict[str, Any]] = {
    "default": dict(dj_database_url.parse(DATABASE_URL, conn_max_age=60))
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web process and a multi-threaded worker write concurrently: WAL lets readers run
    # beside the writer, IMMEDIATE takes the write lock up front (no upgrade deadlocks) and the
    # timeout makes writers queue instead of failing with "database is locked".
    DATABASES["default"]["CONN_MAX_AGE"] = 600
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test.sqlite3")}
    # Covering indexes' INCLUDE columns (models.W040) are a PostgreSQL speed-up for the
    # dashboard's index-only scans; SQLite builds the same indexes on their key columns, which
    # is all the embedded default needs, so the warning would only be noise at every start.
    SILENCED_SYSTEM_CHECKS = ["models.W040"]
else:
    # A pool of connections per process (EVALSITE_DB_POOL*), or a connection per thread for
    # PgBouncer (EVALSITE_DB_POOL=0); either way a dead connection is replaced before use and a
    # connect gives up after EVALSITE_DB_CONNECT_TIMEOUT: evalsite/dbsettings.py.
    DATABASES["default"] = postgres_settings(os.environ, DATABASES["default"])
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
# Sign-in throttling (evalsite/login.py): failed attempts allowed per username (any case) and
# per client address within the window; the allowance refills steadily over the window. The
# address is REMOTE_ADDR only: X-Forwarded-For is never trusted (a client could forge it), so
# behind a reverse proxy every client shares the proxy's address and its per-address limit.
EVALSITE_LOGIN_MAX_ATTEMPTS = env_int("EVALSITE_LOGIN_MAX_ATTEMPTS", 10)
EVALSITE_LOGIN_MAX_ATTEMPTS_PER_IP = env_int("EVALSITE_LOGIN_MAX_ATTEMPTS_PER_IP", 50)
EVALSITE_LOGIN_WINDOW = env_float("EVALSITE_LOGIN_WINDOW", 900.0)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
if not DEBUG:
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
    CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
X_FRAME_OPTIONS = "DENY"

# --- Celery ---------------------------------------------------------------------------------
BROKER_DIR = DATA_DIR / "broker"
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or "filesystem://"
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {}
if CELERY_BROKER_URL.startswith("filesystem"):
    CELERY_BROKER_TRANSPORT = "evalsite.broker:Transport"
    for sub in ("queue", "processed", "staging", "control"):
        (BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        # Exchange bindings; kombu's default is ./control, relative to the working directory.
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
        # The filesystem transport polls; the default (1 s) would idle a worker between bursts.
        "polling_interval": 0.1,
    }
elif CELERY_BROKER_URL.startswith(("redis", "rediss")):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        # A message whose worker died is redelivered after this; the lease sweeper usually
        # rescues the evaluation sooner, and the compare-and-set claim makes the late copy a
        # no-op.
        "visibility_timeout": env_int("EVALSITE_VISIBILITY_TIMEOUT", 900),
        # Without these a call to a Redis whose host went away (a stopped container: no reset,
        # no refusal) waits for the kernel's TCP timeout, minutes, and blocks acks, restores
        # and shutdown with it. Dead connections are found by the health check, not by a hang.
        "socket_connect_timeout": env_float("EVALSITE_BROKER_CONNECT_TIMEOUT", 5.0),
        "socket_timeout": env_float("EVALSITE_BROKER_SOCKET_TIMEOUT", 10.0),
        "socket_keepalive": True,
        "health_check_interval": 10,
        "retry_on_timeout": True,
    }
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# After a lost connection the consumer reconnects in-process (every 2, 4, … at most 30 s, up to
# 100 times, then the worker exits 1); judging/worker_watch.py exits it sooner when it cannot.
CELERY_BROKER_CONNECTION_RETRY = True
# Judge calls running when the connection goes finish; their results are written by
# compare-and-set and the redelivered copies of their messages claim nothing. (Thread pools
# cannot cancel a running task anyway.)
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Celery's Django fixup closes every database connection after every task unless this is set;
# reconnecting per evaluation cost more than the evaluation's queries. Tasks instead call
# close_old_connections(), which honours CONN_MAX_AGE and drops broken connections.
CELERY_DB_REUSE_MAX = 1_000_000
# judging/worker_watch.py: the heartbeat is stamped every EVALSITE_WORKER_BEAT_SECONDS while the
# consumer consumes; a worker that has not consumed for EVALSITE_WORKER_STALL_SECONDS although
# the broker answers (longer than the reconnect backoff's 30 s), or that has not finished
# stopping EVALSITE_WORKER_STOP_SECONDS after a shutdown began, exits with status 70.
EVALSITE_WORKER_BEAT_SECONDS = env_float("EVALSITE_WORKER_BEAT_SECONDS", 5.0)
EVALSITE_WORKER_STALL_SECONDS = env_float("EVALSITE_WORKER_STALL_SECONDS", 45.0)
EVALSITE_WORKER_STOP_SECONDS = env_float("EVALSITE_WORKER_STOP_SECONDS", 60.0)
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")


def task_lanes(default_queue: str) -> list[Queue]:
    """The two broker lanes every worker consumes (kombu takes turns between them): new single
    runs on the default queue, bulk work (bulk ingest, re-score, retries, resends) on
    ``<default>.bulk``, so a backlog of bulk messages never sits in front of a new run."""
    return [Queue(name, routing_key=name) for name in (default_queue, f"{default_queue}.bulk")]


CELERY_TASK_DEFAULT_QUEUE = os.environ.get("EVALSITE_QUEUE", "celery")
CELERY_TASK_QUEUES = task_lanes(CELERY_TASK_DEFAULT_QUEUE)

# --- Judge and scoring ------------------------------------------------------------------------
EVALSITE_JUDGE_MODEL = os.environ.get("EVALSITE_JUDGE_MODEL", "")
EVALSITE_JUDGE_API_BASE = os.environ.get("EVALSITE_JUDGE_API_BASE", "")
EVALSITE_JUDGE_API_KEY = os.environ.get("EVALSITE_JUDGE_API_KEY", "")
EVALSITE_JUDGE_TIMEOUT = env_float("EVALSITE_JUDGE_TIMEOUT", 60.0)
# "Test connection" in team settings: seconds its one judge call may take (no retries).
EVALSITE_CONNECTION_TEST_TIMEOUT = env_float("EVALSITE_CONNECTION_TEST_TIMEOUT", 15.0)
# "auto": judge calls post straight to an OpenAI-compatible api_base (openai/<name> models with an
# api_base) and use litellm for every other model; "litellm": always litellm (judge_engine/direct.py).
EVALSITE_JUDGE_TRANSPORT = os.environ.get("EVALSITE_JUDGE_TRANSPORT", "auto")
if EVALSITE_JUDGE_TRANSPORT not in ("auto", "litellm"):
    raise ImproperlyConfigured(
        f"EVALSITE_JUDGE_TRANSPORT must be 'auto' or 'litellm', not {EVALSITE_JUDGE_TRANSPORT!r}"
    )
# Teams' judge connections (teams/models.py JudgeConnection). Their api_base may not resolve to
# a loopback, private, link-local or metadata address unless this is 1 (a judge on your LAN).
EVALSITE_JUDGE_ALLOW_PRIVATE = os.environ.get("EVALSITE_JUDGE_ALLOW_PRIVATE", "0") == "1"
# Caps on what a rubric or connection may ask of a judge: checked when written, clamped per call.
EVALSITE_JUDGE_MAX_TIMEOUT = env_float("EVALSITE_JUDGE_MAX_TIMEOUT", 120.0)
EVALSITE_JUDGE_MAX_TOKENS = env_int("EVALSITE_JUDGE_MAX_TOKENS", 16_000)
# Encrypts connection keys at rest (Fernet; comma-separated to rotate, first one encrypts).
# Unset: derived from SECRET_KEY, so changing SECRET_KEY would make stored keys unreadable.
EVALSITE_SECRETS_KEY = os.environ.get("EVALSITE_SECRETS_KEY", "")
# A claimed evaluation whose worker vanished is re-queued once its lease runs out.
EVALSITE_TASK_TIME_LIMIT = env_int("EVALSITE_TASK_TIME_LIMIT", 300)
EVALSITE_LEASE_SECONDS = env_int("EVALSITE_LEASE_SECONDS", EVALSITE_TASK_TIME_LIMIT + 60)
EVALSITE_SWEEP_INTERVAL = env_float("EVALSITE_SWEEP_INTERVAL", 30.0)
# A queued evaluation older than this is assumed lost by the broker and enqueued again.
EVALSITE_REQUEUE_AFTER = env_int("EVALSITE_REQUEUE_AFTER", 120)
EVALSITE_MAX_ATTEMPTS = env_int("EVALSITE_MAX_ATTEMPTS", 5)
# Evaluations per broker message when many are sent at once (bulk ingest, re-score): a worker
# claims, judges (concurrently) and writes one message's evaluations together: the claim's and the
# write's fixed statements are shared by the whole message (docs/benchmarks.md). 1: a message each.
EVALSITE_TASK_BATCH = env_int("EVALSITE_TASK_BATCH", 32)
EVALSITE_MAX_RUN_BYTES = env_int("EVALSITE_MAX_RUN_BYTES", 1_000_000)
EVALSITE_PAGE_SIZE_MAX = env_int("EVALSITE_PAGE_SIZE_MAX", 200)
# Criteria per rubric version (and per inline rubric of a run): every write path refuses more
# with a 422 naming the limit, so one request's work stays bounded.
EVALSITE_MAX_CRITERIA = env_int("EVALSITE_MAX_CRITERIA", 200)
# The rubric editor posts three fields per criterion row; Django's default (1,000) would refuse
# a full draft once the cap is raised past ~330.
DATA_UPLOAD_MAX_NUMBER_FIELDS = max(1000, 3 * EVALSITE_MAX_CRITERIA + 100)
# Graded examples per criterion (issue #13): the draft refuses more and the judge prompt shows at
# most this many of each criterion.
EVALSITE_MAX_EXAMPLES_PER_CRITERION = env_int("EVALSITE_MAX_EXAMPLES_PER_CRITERION", 3)
# POST /api/runs/bulk bodies (up to 1,000 runs) are refused above this before parsing.
EVALSITE_MAX_BULK_BYTES = env_int("EVALSITE_MAX_BULK_BYTES", 20_000_000)
# Django refuses bodies above this outright; the API's own limits (a 413 with a message) are
# the real ones, so this sits just above the largest of them.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(EVALSITE_MAX_BULK_BYTES, 3 * EVALSITE_MAX_RUN_BYTES) + 65_536

# --- Re-scoring and judge rate limits (judging/services/rescore.py, evalsite/ratelimit.py) -----------
# Requests and tokens per minute per judge model, shared by all workers; 0 = unlimited.
# EVALSITE_JUDGE_RATE_LIMITS is JSON for specific models: {"openai/gpt-4o": {"rpm": 500, "tpm": 30000}}.
EVALSITE_JUDGE_RPM = env_int("EVALSITE_JUDGE_RPM", 0)
EVALSITE_JUDGE_TPM = env_int("EVALSITE_JUDGE_TPM", 0)
EVALSITE_JUDGE_RATE_LIMITS = os.environ.get("EVALSITE_JUDGE_RATE_LIMITS", "")
# Where the limiter's buckets live: default Redis when the broker is Redis, else a SQLite file.
EVALSITE_RATELIMIT_URL = os.environ.get("EVALSITE_RATELIMIT_URL", "")
# A worker waits this long at most for the limiter, then defers the evaluation instead.
EVALSITE_RATE_MAX_WAIT = env_float("EVALSITE_RATE_MAX_WAIT", 10.0)
# At most this many evaluations of one batch are in the broker or running at once, so batches
# interleave with each other and with fresh runs instead of queueing strictly first-come.
EVALSITE_BATCH_WINDOW = env_int("EVALSITE_BATCH_WINDOW", 64)
EVALSITE_RESCORE_MAX_RUNS = env_int("EVALSITE_RESCORE_MAX_RUNS", 20_000)
EVALSITE_WEBHOOK_TIMEOUT = env_float("EVALSITE_WEBHOOK_TIMEOUT", 10.0)
EVALSITE_WEBHOOK_MAX_RETRIES = env_int("EVALSITE_WEBHOOK_MAX_RETRIES", 8)
EVALSITE_WEBHOOK_BACKOFF = env_float("EVALSITE_WEBHOOK_BACKOFF", 2.0)
# Webhooks to loopback, private, link-local or otherwise non-public addresses are refused (a
# team must not make the server call its own network); set to 1 for receivers on your LAN.
EVALSITE_WEBHOOK_ALLOW_PRIVATE = os.environ.get("EVALSITE_WEBHOOK_ALLOW_PRIVATE", "0") == "1"

# --- Fair sharing between teams and request limits (docs/security.md) ------------------------
# A worker's threads one team may never hold: this many stay free to fetch other teams' work
# (0: an eighth of --concurrency, at least one). Judge requests in flight and claimed
# evaluations are shared the same way (judge_engine/fairshare.py).
EVALSITE_FAIR_RESERVE = env_int("EVALSITE_FAIR_RESERVE", 0)
# judging/fair_ledger.py: with other worker processes alive (Redis), evaluations parked in one
# longer than this go back to the broker, where any process with room takes them.
EVALSITE_FAIR_PARK_SECONDS = env_float("EVALSITE_FAIR_PARK_SECONDS", 5.0)
# API requests per minute per API key (and per signed-in user and team), with bursts of
# EVALSITE_API_BURST; over it the API answers 429 with Retry-After. 0 turns the limit off.
EVALSITE_API_RATE = env_int("EVALSITE_API_RATE", 1200)
EVALSITE_API_BURST = env_int("EVALSITE_API_BURST", 300)
# POST /api/score calls of one team waiting for their results at once (0: no cap). Keep it
# well below the web server's concurrency (gunicorn workers x threads: 48 in docker-compose).
EVALSITE_SCORE_MAX_WAITING = env_int("EVALSITE_SCORE_MAX_WAITING", 16)
# How waiting score calls learn that evaluations ended (evalsite/notify.py): auto
# (PostgreSQL LISTEN/NOTIFY on PostgreSQL, else Redis pub/sub with a Redis broker, else
# polling), postgres, redis or poll.
EVALSITE_NOTIFY = os.environ.get("EVALSITE_NOTIFY", "auto")
if EVALSITE_NOTIFY not in ("auto", "postgres", "redis", "poll"):
    raise ImproperlyConfigured(
        f"EVALSITE_NOTIFY must be auto, postgres, redis or poll, not {EVALSITE_NOTIFY!r}"
    )
# Where waiters LISTEN (a direct PostgreSQL URL, e.g. past a transaction-pooling pgbouncer) or
# SUBSCRIBE (a Redis URL); empty: Django's database, or the rate limiter's Redis.
EVALSITE_NOTIFY_URL = os.environ.get("EVALSITE_NOTIFY_URL", "")
# The web process judges a score call's evaluations itself (as a worker would) when no worker
# has been seen for this many seconds; 0: only when the call asks ("inline": true).
EVALSITE_SCORE_INLINE_WHEN_NO_WORKER = env_float("EVALSITE_SCORE_INLINE_WHEN_NO_WORKER", 0.0)
# Inline judgings at once per web process (each of its threads keeps a database connection);
# a call beyond that waits for a worker instead. The default matches docker-compose's gunicorn
# (16 threads per process): every request thread's call can be judged inline.
EVALSITE_SCORE_INLINE_MAX = env_int("EVALSITE_SCORE_INLINE_MAX", 16)
# Unfinished re-score batches per team (0: no cap).
EVALSITE_TEAM_MAX_ACTIVE_BATCHES = env_int("EVALSITE_TEAM_MAX_ACTIVE_BATCHES", 20)

# --- Human review and judge calibration (reviews/) --------------------------------------------
# Criteria whose judge–human Cohen's kappa is below this are flagged on the rubric's pages.
EVALSITE_REVIEW_KAPPA_THRESHOLD = env_float("EVALSITE_REVIEW_KAPPA_THRESHOLD", 0.4)
# A criterion is flaky when its verdict flips on more than this share of re-judged runs.
EVALSITE_REVIEW_FLIP_THRESHOLD = env_float("EVALSITE_REVIEW_FLIP_THRESHOLD", 0.1)
# A reviewer's claim on a queued run lasts this long without activity.
EVALSITE_REVIEW_CLAIM_SECONDS = env_int("EVALSITE_REVIEW_CLAIM_SECONDS", 600)
# Suggested criterion edits: disagreeing labels a criterion needs before the judge is asked for
# an edit (a rubric may set its own), the disagreeing runs shown (newest first), and the tokens
# the prompt's excerpts share.
EVALSITE_SUGGEST_MIN_LABELS = env_int("EVALSITE_SUGGEST_MIN_LABELS", 3)
EVALSITE_SUGGEST_MAX_RUNS = env_int("EVALSITE_SUGGEST_MAX_RUNS", 8)
EVALSITE_SUGGEST_TOKEN_BUDGET = env_int("EVALSITE_SUGGEST_TOKEN_BUDGET", 6000)
# Criteria drafted from a system prompt (reviews.services.drafting): the prompt's bound in
# tokens, and how many drafts a team may have the judge writing at once.
EVALSITE_DRAFT_TOKEN_BUDGET = env_int("EVALSITE_DRAFT_TOKEN_BUDGET", 8000)
EVALSITE_DRAFT_MAX_IN_FLIGHT = env_int("EVALSITE_DRAFT_MAX_IN_FLIGHT", 2)

# --- OpenTelemetry ingest (runs/otel/) ------------------------------------------------------
# Seconds between an agent span's arrival and its run's assembly (children exported in a
# slightly later batch still join); 0 assembles in the export request itself.
EVALSITE_OTEL_ASSEMBLE_DELAY = env_float("EVALSITE_OTEL_ASSEMBLE_DELAY", 2.0)
# Hours a staged span is kept: spans of traces with no agent span, and the ids of assembled
# ones (so a retried export stores nothing twice).
EVALSITE_OTEL_SPAN_TTL_HOURS = env_float("EVALSITE_OTEL_SPAN_TTL_HOURS", 24.0)
# Work per export stays bounded: attributes and events per span (the OpenTelemetry SDKs keep
# 128 of each by default), and spans per trace (staged and arriving together). Over one, the
# export is a 413 naming the setting and nothing of it is stored.
EVALSITE_OTEL_MAX_ATTRIBUTES = env_int("EVALSITE_OTEL_MAX_ATTRIBUTES", 1_000)
EVALSITE_OTEL_MAX_EVENTS = env_int("EVALSITE_OTEL_MAX_EVENTS", 1_000)
EVALSITE_OTEL_MAX_TRACE_SPANS = env_int("EVALSITE_OTEL_MAX_TRACE_SPANS", 5_000)
# Seconds an assembled run's spans keep their content: a span of its agent arriving this long
# after the run was assembled (a straggler) is merged into it and the run judged again; later
# ones are rejected. Keep it well under the spans' time to live.
EVALSITE_OTEL_LATE_WINDOW = env_float("EVALSITE_OTEL_LATE_WINDOW", 600.0)
# Each team's newest OTLP rejections kept (GET /api/otel/rejections, the OpenTelemetry page).
EVALSITE_OTEL_REJECTIONS_KEPT = env_int("EVALSITE_OTEL_REJECTIONS_KEPT", 500)

# --- Verdicts exported to a team's own tracing (runs/otel/export.py) ---------------------------
# Evaluations per OTLP request (each one event per criterion plus one for its result).
EVALSITE_OTEL_EXPORT_BATCH = env_int("EVALSITE_OTEL_EXPORT_BATCH", 20)
# Requests one drain task sends at most (then it asks for another drain).
EVALSITE_OTEL_EXPORT_MAX_BATCHES = env_int("EVALSITE_OTEL_EXPORT_MAX_BATCHES", 50)
# Evaluations waiting per team; beyond it the oldest are dropped unsent (and counted).
EVALSITE_OTEL_EXPORT_MAX_PENDING = env_int("EVALSITE_OTEL_EXPORT_MAX_PENDING", 10_000)
# Attempts of one evaluation's events before they are given up (and counted as failed).
EVALSITE_OTEL_EXPORT_MAX_ATTEMPTS = env_int("EVALSITE_OTEL_EXPORT_MAX_ATTEMPTS", 10)
# Seconds before the second attempt, doubled for each further one (at most an hour).
EVALSITE_OTEL_EXPORT_BACKOFF = env_float("EVALSITE_OTEL_EXPORT_BACKOFF", 10.0)
# Seconds one request (with the SDK's own quick retries of 429/502/503/504) may take.
EVALSITE_OTEL_EXPORT_TIMEOUT = env_float("EVALSITE_OTEL_EXPORT_TIMEOUT", 10.0)
# Seconds between beat drains (besides the drain asked for when evaluations finish).
EVALSITE_OTEL_EXPORT_INTERVAL = env_float("EVALSITE_OTEL_EXPORT_INTERVAL", 30.0)

# --- Judge budgets (judging/services/budget.py) -----------------------------------------------
# Seconds between runs of the budget beat task: expired reservations are given back and
# over-budget evaluations of teams with room again (a new day or month) are queued.
EVALSITE_BUDGET_INTERVAL = env_float("EVALSITE_BUDGET_INTERVAL", 60.0)
# At most this many over-budget evaluations per team are queued again per run of that task
# (or per save of a budget); the rest follow on the next runs.
EVALSITE_BUDGET_RESUME_MAX = env_int("EVALSITE_BUDGET_RESUME_MAX", 500)
# Each process reserves slices of a team's remaining budget and admits its messages from them
# in memory (judging/services/budget_slices.py): at most this many tokens per slice (and at most a
# quarter of the room left), each kept at most this many seconds before the usage it counted
# is settled on the team's counters.
EVALSITE_BUDGET_SLICE_TOKENS = env_int("EVALSITE_BUDGET_SLICE_TOKENS", 50_000)
EVALSITE_BUDGET_SLICE_SECONDS = env_float("EVALSITE_BUDGET_SLICE_SECONDS", 1.0)

# --- Alerts (reviews/services/alerts.py) ----------------------------------------------------
# Seconds between evaluations of every alert rule (Celery beat).
EVALSITE_ALERT_INTERVAL = env_float("EVALSITE_ALERT_INTERVAL", 60.0)
# This deployment's address as people reach it (e.g. https://evals.example.com): alert webhooks
# link to the runs that caused an alert with it; empty: the links are paths only.
EVALSITE_PUBLIC_URL = os.environ.get("EVALSITE_PUBLIC_URL", "").rstrip("/")
# Signed-in users without a team may make one from the "no team" page. Off: only the first user
# of a fresh deployment can (others are added by an owner or `manage.py team`).
EVALSITE_ALLOW_TEAM_CREATION = env_bool("EVALSITE_ALLOW_TEAM_CREATION", True)
# Days an invitation link (team settings → Members, `manage.py team invite`) stays valid.
EVALSITE_INVITE_DAYS = env_int("EVALSITE_INVITE_DAYS", 7)

# --- Email (optional) -------------------------------------------------------------------------
# With EMAIL_HOST set (or an EMAIL_BACKEND of your choice), invitation links are also mailed to
# the invited address; without, nothing is sent and the owner copies the link.
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_PORT = env_int("EMAIL_PORT", 587)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "evalsite@localhost")
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND") or (
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.dummy.EmailBackend"
)

# --- Retention (reviews/services/retention.py, docs/retention.md) -------------------------
# Seconds between runs of the retention task (Celery beat), which deletes each team's runs
# older than its retention (Team.retention_days) in batches of EVALSITE_RETENTION_BATCH runs,
# each batch one short transaction, at most EVALSITE_RETENTION_MAX_BATCHES batches a run.
EVALSITE_RETENTION_INTERVAL = env_float("EVALSITE_RETENTION_INTERVAL", 3600.0)
EVALSITE_RETENTION_BATCH = env_int("EVALSITE_RETENTION_BATCH", 500)
EVALSITE_RETENTION_MAX_BATCHES = env_int("EVALSITE_RETENTION_MAX_BATCHES", 200)

CELERY_BEAT_SCHEDULE = {
    "alerts": {"task": "reviews.tasks.alerts_evaluate", "schedule": EVALSITE_ALERT_INTERVAL},
    "sweep-evaluations": {"task": "runs.tasks.sweep", "schedule": EVALSITE_SWEEP_INTERVAL},
    "judge-budgets": {"task": "runs.tasks.budgets_tick", "schedule": EVALSITE_BUDGET_INTERVAL},
    "sweep-otel-spans": {"task": "runs.tasks.otel_sweep", "schedule": EVALSITE_SWEEP_INTERVAL},
    "otel-export": {
        "task": "runs.tasks.otel_export_drain",
        "schedule": EVALSITE_OTEL_EXPORT_INTERVAL,
    },
    "retention": {
        "task": "reviews.tasks.retention_enforce",
        "schedule": EVALSITE_RETENTION_INTERVAL,
    },
}


def _not_hostless(record: Any) -> bool:
    """kombu warns that a broker URL names no host; the filesystem broker has none to name."""
    return "No hostname was supplied" not in record.getMessage()


LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {
        "hostless": {"()": "django.utils.log.CallbackFilter", "callback": _not_hostless},
        # Defence in depth: nothing shaped like a key, token or secret is written out.
        "secrets": {"()": "evalsite.logredact.RedactSecrets"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["secrets"]}
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "LiteLLM": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "django.db.backends": {"level": "INFO"},
        "kombu.connection": {
            "filters": ["hostless"] if CELERY_BROKER_URL.startswith("filesystem") else []
        },
    },
}
