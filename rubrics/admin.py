from django.contrib import admin

from .models import Criterion, Rubric, RubricVersion


class CriterionInline(admin.TabularInline):
    model = Criterion
    extra = 0
    fields = ("position", "key", "description", "required")
    # Versions are immutable: criteria change through the editor or the API.
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Rubric)
class RubricAdmin(admin.ModelAdmin):
    list_display = ["name", "team", "slug", "current_version", "judge_model", "archived_at"]
    list_filter = ["team", "strategy", "alignment_mode"]
    search_fields = ["name", "slug"]
    readonly_fields = ["current_version", "created_at", "updated_at"]


@admin.register(RubricVersion)
class RubricVersionAdmin(admin.ModelAdmin):
    list_display = ["rubric", "number", "created_at", "created_by"]
    list_filter = ["rubric__team"]
    inlines = [CriterionInline]
    readonly_fields = ["rubric", "number", "created_by", "created_at"]
