"""Settings for the test suite: the normal settings with a data folder of its own, so a test
run never shares a SQLite file or a broker queue with a dashboard running on the same checkout.
DATABASE_URL and CELERY_BROKER_URL still come from the environment (CI sets PostgreSQL/Redis)."""

import os
from pathlib import Path

os.environ.setdefault(
    "EVALSITE_DATA_DIR", str(Path(__file__).resolve().parent.parent / ".testdata")
)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from .settings import *  # noqa: E402,F403
from .settings import DATABASES  # noqa: E402

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast test users
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["TEST"] = {"NAME": str(Path(os.environ["EVALSITE_DATA_DIR"]) / "test.sqlite3")}
