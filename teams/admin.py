from django.contrib import admin

from .models import ApiKey, Membership, Team, TeamInvite


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "team", "role"]
    list_filter = ["role", "team"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["name", "team", "prefix", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["team"]
    readonly_fields = ["prefix", "hashed_key", "created_at", "last_used_at"]


@admin.register(TeamInvite)
class TeamInviteAdmin(admin.ModelAdmin):
    list_display = [
        "email",
        "team",
        "role",
        "created_at",
        "expires_at",
        "accepted_at",
        "revoked_at",
    ]
    list_filter = ["team", "role"]
    search_fields = ["email"]
    readonly_fields = ["hashed_token", "created_at", "accepted_at", "accepted_by"]
