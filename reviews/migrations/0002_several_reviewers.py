"""Several reviewers: each reviewer's latest verdict is kept (ReviewerLabel) and the label in
effect becomes their majority. Existing labels move over unchanged: each label in effect
becomes the verdict of the reviewer whose change it came from, so every majority equals the
old label and no run's result moves."""

import uuid
from collections import defaultdict

import django.db.models.deletion
from django.db import migrations, models

BATCH = 1000


def _key(row):
    if row.actor_id is not None:
        return f"user:{row.actor_id}"
    if row.api_key_id is not None:
        return f"key:{row.api_key_id}"
    return f"name:{row.actor_name}"[:64]


def forwards(apps, schema_editor):
    VerdictOverride = apps.get_model("reviews", "VerdictOverride")
    VerdictLabel = apps.get_model("reviews", "VerdictLabel")
    ReviewerLabel = apps.get_model("reviews", "ReviewerLabel")
    RunReview = apps.get_model("reviews", "RunReview")
    keys = {}
    for row in VerdictOverride.objects.order_by("created_at").iterator(chunk_size=2000):
        # A revert changes the verdict of the reviewer it reverts.
        key = keys.get(row.reverts_id) if row.reverts_id else None
        keys[row.pk] = key or _key(row)
    by_key = defaultdict(list)
    for pk, key in keys.items():
        by_key[key].append(pk)
    for key, pks in by_key.items():
        for start in range(0, len(pks), BATCH):
            VerdictOverride.objects.filter(pk__in=pks[start : start + BATCH]).update(
                reviewer_key=key
            )
    reviewers = defaultdict(set)
    made = []
    for label in VerdictLabel.objects.iterator(chunk_size=BATCH):
        key = keys[label.source_id]
        made.append(
            ReviewerLabel(
                team_id=label.team_id,
                run_id=label.run_id,
                rubric_id=label.rubric_id,
                criterion_key=label.criterion_key,
                text_hash=label.text_hash,
                description=label.description,
                reviewer_key=key,
                satisfied=label.satisfied,
                note=label.note,
                source_id=label.source_id,
                updated_at=label.updated_at,
            )
        )
        reviewers[(label.run_id, label.rubric_id)].add(key)
    ReviewerLabel.objects.bulk_create(made, batch_size=BATCH)
    for (run_id, rubric_id), found in reviewers.items():
        RunReview.objects.filter(run_id=run_id, rubric_id=rubric_id).update(reviewers=len(found))


def backwards(apps, schema_editor):
    """The majority labels stay in VerdictLabel: dropping the per-reviewer table loses
    nothing the single-label schema could hold."""


class Migration(migrations.Migration):
    dependencies = [
        ("reviews", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="runreview",
            name="disputed",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="runreview",
            name="reviewers",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="verdictoverride",
            name="reviewer_key",
            field=models.CharField(default="", max_length=64),
        ),
        migrations.CreateModel(
            name="ReviewerLabel",
            fields=[
                (
                    "id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("criterion_key", models.CharField(max_length=32)),
                ("text_hash", models.CharField(max_length=64)),
                ("description", models.TextField()),
                ("reviewer_key", models.CharField(max_length=64)),
                ("satisfied", models.BooleanField()),
                ("note", models.TextField(blank=True)),
                ("updated_at", models.DateTimeField()),
                (
                    "rubric",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="rubrics.rubric",
                    ),
                ),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="reviewer_labels",
                        to="runs.agentrun",
                    ),
                ),
                (
                    "source",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="reviews.verdictoverride",
                    ),
                ),
                (
                    "team",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="teams.team",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["rubric", "reviewer_key"], name="rlabel_rubric_reviewer")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("run", "rubric", "criterion_key", "text_hash", "reviewer_key"),
                        name="reviewer_label_unique",
                    )
                ],
            },
        ),
        migrations.RunPython(forwards, backwards),
    ]
