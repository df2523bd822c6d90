from django.apps import AppConfig

from runs.hooks import result_adjuster_register


class ReviewsConfig(AppConfig):
    name = "reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, not at the top: services import models, which Django loads only after
        # every app's config (this module) has been imported.
        from .services import review_results_refresh

        # A run refresh (runs.services.run_state) lets human labels adjust the run's result.
        result_adjuster_register(review_results_refresh)
