from django.apps import AppConfig

from runs.hooks import batch_ended_register, result_adjuster_register


class ReviewsConfig(AppConfig):
    name = "reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, not at the top: services import models, which Django loads only after
        # every app's config (this module) has been imported.
        from .services import review_results_refresh

        # A run refresh (runs.services.run_state) lets human labels adjust the run's result.
        result_adjuster_register(review_results_refresh)

        from .services.gate import gate_on_batch_end

        # A comparison's batch ended: a publishing gate waiting on it is decided.
        batch_ended_register(gate_on_batch_end)

        from judging.services.budget_slices import usage_source_register

        from .services.drafting import drafts_usage
        from .services.suggestion_decide import suggestions_usage

        # The judge budget counts the tokens suggested edits and drafted criteria took, as it
        # counts evaluations'.
        usage_source_register(suggestions_usage)
        usage_source_register(drafts_usage)
