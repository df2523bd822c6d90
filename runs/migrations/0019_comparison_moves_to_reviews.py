"""Comparisons (and the publishing gate) moved to the reviews app: the model leaves runs' state
only; its table, runs_comparison, stays as it is (reviews 0004 takes it over)."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0018_results_only_when_succeeded'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(
                    name='Comparison',
                ),
            ],
            database_operations=[],
        ),
    ]
