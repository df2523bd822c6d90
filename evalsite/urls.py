from django.contrib import admin
from django.urls import include, path

from .api import api
from .login import LoginView, ThrottledAdminAuthenticationForm

# The admin's sign-in obeys the same lock-out as the site's.
admin.site.login_form = ThrottledAdminAuthenticationForm

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", api.urls),
    path("", include("teams.urls")),
    path("", include("rubrics.urls")),
    path("", include("runs.urls")),
    path("reviews/", include("reviews.urls")),
]
