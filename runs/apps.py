from django.apps import AppConfig
from django.conf import settings

from judge_engine.redact import hide_addresses


class RunsConfig(AppConfig):
    name = "runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Errors teams read never show where the deployment's own judge lives.
        hide_addresses(lambda: [settings.EVALSITE_JUDGE_API_BASE])
