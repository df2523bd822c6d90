from django.contrib import admin
from django.urls import include, path

from .api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", api.urls),
    path("", include("teams.urls")),
    path("", include("rubrics.urls")),
    path("", include("runs.urls")),
    path("reviews/", include("reviews.urls")),
]
