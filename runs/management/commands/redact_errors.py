"""`manage.py redact_errors`: clean error texts stored before this deployment cleaned them on
write (no traceback, no server path, at most 1,000 characters). Idempotent; run it once after
upgrading."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from runs.services.redact_stored import stored_errors_redact


class Command(BaseCommand):
    help = "Remove tracebacks and server paths from stored error texts (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        done = stored_errors_redact()
        self.stdout.write(
            f"cleaned {done.evaluations} evaluation(s) and {done.batches} re-score batch(es)"
        )
