from django.urls import path

from . import views

urlpatterns = [
    path("rubrics/", views.rubric_list, name="rubric_list"),
    path("rubrics/new/", views.rubric_new, name="rubric_new"),
    path("rubrics/<uuid:rubric_id>/", views.rubric_detail, name="rubric_detail"),
    path("rubrics/<uuid:rubric_id>/criteria/", views.rubric_criteria, name="rubric_criteria"),
    path("rubrics/<uuid:rubric_id>/settings/", views.rubric_settings, name="rubric_settings"),
    path("rubrics/<uuid:rubric_id>/try/", views.rubric_try_view, name="rubric_try"),
    path("failures/", views.failures, name="failures"),
    path("failures/<uuid:rubric_id>/<str:key>/", views.failures_walk, name="failures_walk"),
]
