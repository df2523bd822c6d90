from django.urls import path

from . import views, views_export, views_invites, views_members

urlpatterns = [
    path("team/switch/", views.team_switch, name="team_switch"),
    path("team/none/", views_members.no_team, name="no_team"),
    path("team/members/", views_members.member_invite_view, name="member_invite"),
    path(
        "team/members/<int:membership_id>/role/",
        views_members.member_role_view,
        name="member_role",
    ),
    path(
        "team/members/<int:membership_id>/remove/",
        views_members.member_remove_view,
        name="member_remove",
    ),
    path(
        "team/invites/<uuid:invite_id>/revoke/",
        views_invites.invite_revoke_view,
        name="invite_revoke",
    ),
    path("invite/<str:token>/", views_invites.invite_page, name="invite"),
    path("team/", views.team_settings, name="team_settings"),
    path("team/settings/", views.team_settings_save, name="team_settings_save"),
    path("team/retention/", views.team_retention_save, name="team_retention_save"),
    path("team/budget/", views.team_budget_save, name="team_budget_save"),
    path("team/otel-export/", views_export.otel_export_save, name="otel_export_save"),
    path(
        "team/otel-export/remove/",
        views_export.otel_export_remove_view,
        name="otel_export_remove",
    ),
    path("team/keys/", views.api_key_new, name="api_key_new"),
    path("team/keys/<uuid:key_id>/revoke/", views.api_key_revoke_view, name="api_key_revoke"),
    path("team/webhook-secret/", views.webhook_secret_rotate, name="webhook_secret_rotate"),
    path("team/connections/", views.connection_new, name="connection_new"),
    path("team/connections/<uuid:connection_id>/", views.connection_edit, name="connection_edit"),
    path(
        "team/connections/<uuid:connection_id>/test/",
        views.connection_test_view,
        name="connection_test",
    ),
    path(
        "team/connections/<uuid:connection_id>/delete/",
        views.connection_delete_view,
        name="connection_delete",
    ),
]
