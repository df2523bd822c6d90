from django.contrib import admin
from django.urls import include, path

from .api import api
from .login import LoginView, ThrottledAdminAuthenticationForm, admin_login

# The admin's sign-in obeys the same lock-out as the site's.
admin.site.login_form = ThrottledAdminAuthenticationForm

urlpatterns = [
    # Before the admin's own: a locked-out sign-in answers 429, as the site's does.
    path("admin/login/", admin_login),
    path("admin/", admin.site.urls),
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", api.urls),
    path("", include("teams.urls")),
    path("", include("rubrics.urls")),
    path("", include("runs.urls")),
    path("reviews/", include("reviews.urls")),
]
