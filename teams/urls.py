from django.urls import path

from . import views

urlpatterns = [
    path("team/switch/", views.team_switch, name="team_switch"),
    path("team/none/", views.no_team, name="no_team"),
    path("team/", views.team_settings, name="team_settings"),
    path("team/settings/", views.team_settings_save, name="team_settings_save"),
    path("team/keys/", views.api_key_new, name="api_key_new"),
    path("team/keys/<uuid:key_id>/revoke/", views.api_key_revoke_view, name="api_key_revoke"),
]
