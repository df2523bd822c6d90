"""Comparisons (and the publishing gate) join the reviews app: the model enters reviews' state
over the table it always had, runs_comparison (created by runs 0010); no database change."""
import django.db.models.deletion
import uuid
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('reviews', '0003_alerts'),
        ('rubrics', '0010_working_copy_new_rubric'),
        ('runs', '0019_comparison_moves_to_reviews'),
        ('teams', '0006_team_invite'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Comparison',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('judge_a', models.CharField(max_length=200)),
                        ('judge_b', models.CharField(max_length=200)),
                        ('sample', models.JSONField(default=dict)),
                        ('runs', models.PositiveIntegerField(default=0)),
                        ('estimate', models.JSONField(default=dict)),
                        ('purpose', models.CharField(choices=[('compare', 'Comparison'), ('gate', 'Publishing gate check')], default='compare', max_length=8)),
                        ('gate_state', models.CharField(blank=True, choices=[('', 'No gate'), ('checking', 'Checking the gate'), ('passed', 'Passed: published'), ('failed', 'Failed: not published'), ('overridden', 'Failed, published anyway')], max_length=10)),
                        ('gate_result', models.JSONField(blank=True, default=dict)),
                        ('idempotency_key', models.CharField(blank=True, max_length=200, null=True)),
                        ('request_hash', models.CharField(blank=True, max_length=64)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('batch_a', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='runs.rescorebatch')),
                        ('batch_b', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='runs.rescorebatch')),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('rubric', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='comparisons', to='rubrics.rubric')),
                        ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='teams.team')),
                        ('version_a', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='rubrics.rubricversion')),
                        ('version_b', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='rubrics.rubricversion')),
                    ],
                    options={
                        'db_table': 'runs_comparison',
                        'ordering': ['-created_at'],
                        'indexes': [models.Index(fields=['rubric', 'purpose', '-created_at'], name='comparison_rubric')],
                        'constraints': [models.UniqueConstraint(condition=models.Q(('idempotency_key__isnull', False)), fields=('team', 'idempotency_key'), name='comparison_unique_idempotency_key')],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
