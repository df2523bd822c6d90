"""Evaluation.user_applicable: whether the user perspective was judged (issue 16: `both`
without a user message now scores the system perspective alone).

Before this, every succeeded alignment evaluation judged the user perspective unless its mode
was `system` (`both` without a user message failed), and exactly those have a user score: the
backfill sets the flag from it in two UPDATE statements. Rubric evaluations and alignment ones
that never succeeded keep null, as their system_applicable does.
"""

from django.db import migrations, models


def backfill(apps, schema_editor):
    Evaluation = apps.get_model("runs", "Evaluation")
    judged = Evaluation.objects.filter(kind="alignment", system_applicable__isnull=False)
    judged.filter(user_score__isnull=False).update(user_applicable=True)
    judged.filter(user_score__isnull=True).update(user_applicable=False)


class Migration(migrations.Migration):
    dependencies = [("runs", "0010_comparisons")]

    operations = [
        migrations.AddField(
            model_name="evaluation",
            name="user_applicable",
            field=models.BooleanField(null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
