"""`manage.py rollups_rebuild [--team SLUG]`: recount the rollups (docs/rollups.md) from the raw
runs and verdicts stored now. Safe while workers write (they wait for it); run it after a bulk
load that bypassed the services (bench/pages) or to check the incremental counts."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from runs.services.rollups import rollups_rebuild
from teams.models import Team


class Command(BaseCommand):
    help = "Recount the home page, rubric list, rubric editor and failure-rate rollups from the raw rows."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--team", help="the slug of one team (default: every team)")

    def handle(self, *args: Any, **options: Any) -> None:
        team = None
        if options["team"]:
            team = Team.objects.filter(slug=options["team"]).first()
            if team is None:
                raise CommandError(f"--team: no team with the slug {options['team']!r}")
        done = rollups_rebuild(team=team)
        self.stdout.write(
            f"rebuilt {done['run_days']} run day(s), {done['criterion_days']} criterion day(s), "
            f"{done['evaluation_days']} evaluation day(s), {done['versions']} version(s) "
            f"and {done['version_days']} version day(s)"
        )
