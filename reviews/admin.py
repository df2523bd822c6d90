from django.contrib import admin

from .models import AlignmentOverride, Calibration, RunReview, VerdictOverride


class ReadOnlyAdmin(admin.ModelAdmin):
    """Review history is append-only: write it through the review pages or the API."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(VerdictOverride)
class VerdictOverrideAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "actor_name", "action", "criterion_key", "run", "to_satisfied"]
    list_filter = ["action", "team"]
    search_fields = ["criterion_key", "actor_name", "note"]


@admin.register(AlignmentOverride)
class AlignmentOverrideAdmin(ReadOnlyAdmin):
    list_display = [
        "created_at",
        "actor_name",
        "action",
        "perspective",
        "dimension",
        "run",
        "to_score",
    ]
    list_filter = ["action", "team"]


@admin.register(RunReview)
class RunReviewAdmin(ReadOnlyAdmin):
    list_display = [
        "run",
        "rubric",
        "reviewed_at",
        "labelled",
        "overridden",
        "golden",
        "claimed_by",
    ]
    list_filter = ["golden", "rubric__team"]


@admin.register(Calibration)
class CalibrationAdmin(ReadOnlyAdmin):
    list_display = [
        "created_at",
        "kind",
        "rubric",
        "version",
        "judge_model",
        "repeats",
        "created_by",
    ]
    list_filter = ["kind", "team"]
