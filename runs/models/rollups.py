"""Rollups: counts per team, rubric and UTC day that the home page, the rubric list and the
failure-rate page read instead of aggregating raw runs and verdicts (docs/rollups.md).

Plain ids, not foreign keys, for what they count: retention deletes raw runs and rubrics may
be deleted, and a rollup keeps counting them. Only the team cascades.
"""

import uuid

from django.db import models

from teams.models import Team

NO_RUBRIC = uuid.UUID(int=0)  # runs without a rubric (a NULL would defeat the unique key)


class RunDayRollup(models.Model):
    """Runs of one team and rubric created on one UTC day: how many, how many have a result
    and how many passed (the run's effective result: human labels included), the newest."""

    id = models.BigAutoField(primary_key=True)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    rubric_ref = models.UUIDField()  # the run's rubric id, or NO_RUBRIC
    day = models.DateField()
    runs = models.IntegerField(default=0)
    judged = models.IntegerField(default=0)
    passed = models.IntegerField(default=0)
    last_run_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # No check constraints on the counts: a result is never refused over a count (a
        # database upgraded without rollups_rebuild would start from zero).
        constraints = [
            # The upsert's conflict target; also serves the home page and the rubric list
            # (team, a window of days).
            models.UniqueConstraint(
                fields=["team", "day", "rubric_ref"], name="run_rollup_unique_day"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.rubric_ref}: {self.passed}/{self.judged} of {self.runs}"


class CriterionDayRollup(models.Model):
    """Current judge verdicts on one criterion (of one rubric version) for runs created on
    one UTC day: how many, and how many unsatisfied."""

    id = models.BigAutoField(primary_key=True)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    rubric_ref = models.UUIDField()
    version_ref = models.UUIDField()
    criterion_ref = models.UUIDField()
    day = models.DateField()
    judged = models.IntegerField(default=0)
    failed = models.IntegerField(default=0)

    class Meta:
        # No check constraints on the counts: a result is never refused over a count (a
        # database upgraded without rollups_rebuild would start from zero).
        constraints = [
            # The upsert's conflict target; also serves the failure-rate page (criteria of
            # one version, every day).
            models.UniqueConstraint(
                fields=["criterion_ref", "day"], name="criterion_rollup_unique_day"
            ),
        ]
        indexes = [
            # rollups_rebuild --team: the team's rows.
            models.Index(fields=["team"], name="criterion_rollup_team"),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.criterion_ref}: {self.failed}/{self.judged}"


class EvaluationDayRollup(models.Model):
    """Ended evaluations (succeeded, failed, cancelled, nothing to judge) of one team created
    on one UTC day, per kind and status, and for current alignment evaluations per band: how
    many, and the judge usage they recorded. Pending ones are few and read raw."""

    id = models.BigAutoField(primary_key=True)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    kind = models.CharField(max_length=16)
    status = models.CharField(max_length=20)
    band = models.CharField(max_length=16, blank=True)  # "" unless a current alignment result
    evaluations = models.IntegerField(default=0)
    tokens = models.BigIntegerField(default=0)
    cost = models.FloatField(null=True, blank=True)  # None: no evaluation had a known cost
    calls = models.IntegerField(default=0)

    class Meta:
        constraints = [
            # The upsert's conflict target; also serves the home page (team, a window of days).
            models.UniqueConstraint(
                fields=["team", "day", "kind", "status", "band"], name="eval_rollup_unique_day"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.kind} {self.status} {self.band}: {self.evaluations}"


class VersionRollup(models.Model):
    """Runs judged on one rubric version: distinct runs with a succeeded evaluation on it
    (a run judged on it again, by a re-score or a calibration, counts once). The rubric
    editor's history reads it."""

    id = models.BigAutoField(primary_key=True)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    version_ref = models.UUIDField()  # the rubric version's id
    runs_judged = models.IntegerField(default=0)

    class Meta:
        constraints = [
            # The upsert's conflict target; also serves the rubric editor (its versions' ids).
            models.UniqueConstraint(fields=["version_ref"], name="version_rollup_unique"),
        ]
        indexes = [
            # rollups_rebuild --team: the team's rows.
            models.Index(fields=["team"], name="version_rollup_team"),
        ]

    def __str__(self) -> str:
        return f"{self.version_ref}: {self.runs_judged} run(s) judged"


class VersionDayRollup(models.Model):
    """Runs of one team and rubric created on one UTC day whose result was judged on one rubric
    version (the run's current version): how many have a result and how many passed (the
    effective result, as RunDayRollup). A run re-scored on a new version moves to it. The
    pass-rate trends (one series per version) read it."""

    id = models.BigAutoField(primary_key=True)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    rubric_ref = models.UUIDField()  # the run's rubric id, or NO_RUBRIC
    version_ref = models.UUIDField()  # the rubric version its result is from
    day = models.DateField()
    judged = models.IntegerField(default=0)
    passed = models.IntegerField(default=0)

    class Meta:
        constraints = [
            # The upsert's conflict target; also serves the trends (team, rubric, a window of
            # days).
            models.UniqueConstraint(
                fields=["team", "rubric_ref", "day", "version_ref"],
                name="version_day_rollup_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.version_ref}: {self.passed}/{self.judged}"
