"""A run's stored result (passed, score, alignment_score) holds only for a succeeded run (the one
rule, judge_engine.rules.run_result): clear it on runs stored before in any other state (a
failed alignment evaluation beside a passed rubric one, a re-score under way, over budget), so
pass rates and rollups stop counting them. Run ``manage.py rollups_rebuild`` once afterwards."""

from django.db import migrations


def clear(apps, schema_editor):
    AgentRun = apps.get_model("runs", "AgentRun")
    AgentRun.objects.exclude(status="succeeded").exclude(
        passed__isnull=True, score__isnull=True, alignment_score__isnull=True
    ).update(passed=None, score=None, alignment_score=None)


class Migration(migrations.Migration):
    dependencies = [("runs", "0017_otel_rejections")]

    operations = [migrations.RunPython(clear, migrations.RunPython.noop, elidable=True)]
