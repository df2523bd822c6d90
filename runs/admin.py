from django.contrib import admin

from .models import AgentRun, AlignmentBreakdown, CriterionVerdict, Evaluation, RescoreBatch


class VerdictInline(admin.TabularInline):
    model = CriterionVerdict
    extra = 0
    fields = (
        "criterion_key",
        "description",
        "required",
        "satisfied",
        "reasoning",
        "reused_from",
    )
    readonly_fields = fields
    can_delete = False


class AlignmentInline(admin.StackedInline):
    model = AlignmentBreakdown
    extra = 0
    can_delete = False


@admin.register(AgentRun)
class AgentRunAdmin(admin.ModelAdmin):
    list_display = ["__str__", "team", "agent", "rubric", "status", "passed", "score", "created_at"]
    list_filter = ["team", "status", "passed", "agent"]
    search_fields = ["external_id", "task_text", "output_text"]
    readonly_fields = ["content_hash", "created_at"]


@admin.register(Evaluation)
class EvaluationAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "kind",
        "run",
        "rubric_version",
        "status",
        "attempts",
        "score",
        "passed",
        "created_at",
    ]
    list_filter = ["status", "kind", "team"]
    readonly_fields = [
        "lease_token",
        "lease_expires_at",
        "calls",
        "created_at",
        "started_at",
        "finished_at",
    ]
    inlines = [VerdictInline, AlignmentInline]


@admin.register(RescoreBatch)
class RescoreBatchAdmin(admin.ModelAdmin):
    list_display = ["id", "team", "rubric", "status", "total", "created_at", "finished_at"]
    list_filter = ["status", "team"]
