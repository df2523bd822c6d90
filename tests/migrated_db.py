"""The SQLite test database, migrated once per set of migrations rather than once per process.

Every pytest process (each xdist worker of both passes of scripts/test) used to build its test
database by running all migrations: about 6.5 s of CPU each, the largest fixed cost of a process.
The result depends only on the migrations, Django and SQLite, so the first process to migrate
keeps a copy (.testdata/migrated/<key>.sqlite3, written whole and renamed into place) and the
others start from it; Django's setup then finds every migration applied and only runs the
post-migrate steps. A changed migration, Django or SQLite gives another key, hence a fresh
migrate. PostgreSQL (CI's second suite) migrates as before. EVALSITE_TEST_MIGRATE=1 turns the
copy off.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import django
import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".testdata" / "migrated"


def _test_file() -> Path | None:
    db = settings.DATABASES["default"]
    if db["ENGINE"] != "django.db.backends.sqlite3" or os.environ.get("EVALSITE_TEST_MIGRATE"):
        return None
    return Path(db["TEST"]["NAME"])


def _key() -> str:
    digest = hashlib.sha256(f"{django.__version__} {sqlite3.sqlite_version}".encode())
    for path in sorted(ROOT.glob("*/migrations/*.py")):
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _copy(source: Path, target: Path) -> None:
    """A consistent copy through SQLite's backup API (the source may be open, in WAL mode)."""
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    with sqlite3.connect(source) as src, sqlite3.connect(partial) as dst:
        src.backup(dst)
    src.close()
    dst.close()
    os.replace(partial, target)


@pytest.fixture(scope="session")
def django_db_keepdb(request: pytest.FixtureRequest) -> bool:
    """Overrides pytest-django's: keep (reuse) the test database when it starts from the
    migrated copy, so setup_databases migrates nothing."""
    reuse: bool = request.config.getvalue("reuse_db")
    target = _test_file()
    if reuse or target is None:
        return reuse
    cached = CACHE / f"{_key()}.sqlite3"
    if not cached.exists():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in (target, target.with_name(target.name + "-wal")):
        stale.unlink(missing_ok=True)
    _copy(cached, target)
    return True


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_keepdb: bool) -> Iterator[None]:
    """Extends pytest-django's: after the first real migrate, keep the migrated copy."""
    target = _test_file()
    if target is not None and not django_db_keepdb and target.exists():
        cached = CACHE / f"{_key()}.sqlite3"
        if not cached.exists():
            CACHE.mkdir(parents=True, exist_ok=True)
            _copy(target, cached)
    yield
