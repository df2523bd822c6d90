"""Trigram indexes for the runs list's free-text search (PostgreSQL only).

The search is ``icontains`` on external_id, task_text and output_text, which Django writes as
``UPPER(col::text) LIKE UPPER('%q%')``; GIN trigram indexes on exactly those expressions let
PostgreSQL answer a rare phrase from the index instead of scanning every run. SQLite (the
embedded stack) has no pg_trgm and keeps scanning, which is fine at its scale. Where the
extension cannot be created (no privilege), the indexes are skipped and search still works.
"""

from django.db import DatabaseError, migrations, transaction

COLUMNS = {
    "run_search_external_id": "external_id",
    "run_search_task": "task_text",
    "run_search_output": "output_text",
}


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        try:
            # A savepoint, so a refused CREATE EXTENSION does not abort the migration.
            with transaction.atomic(using=schema_editor.connection.alias):
                cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        except DatabaseError:
            return
        for name, column in COLUMNS.items():
            cursor.execute(
                f'CREATE INDEX IF NOT EXISTS {name} ON runs_agentrun USING gin (UPPER("{column}") gin_trgm_ops)'
            )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        for name in COLUMNS:
            cursor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("runs", "0003_dashboard_indexes")]

    operations = [migrations.RunPython(create, drop)]
