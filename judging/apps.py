from django.apps import AppConfig


class JudgingConfig(AppConfig):
    """Turning evaluations into verdicts: execution, fair sharing, judge budgets, re-scoring,
    results. Its tables are runs' (an evaluation, a budget and a batch are part of a run's
    record); judging holds the work done on them."""

    name = "judging"
    default_auto_field = "django.db.models.BigAutoField"
