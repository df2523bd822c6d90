from django.urls import path

from . import views

urlpatterns = [
    path("team/switch/", views.team_switch, name="team_switch"),
    path("team/none/", views.no_team, name="no_team"),
]
