from django.urls import path

from reviews import views_data

from . import views, views_otel

urlpatterns = [
    path("", views.home, name="home"),
    path("runs/", views.run_list, name="run_list"),
    path("runs/export.<str:fmt>", views_data.runs_export, name="runs_export"),
    path("runs/<uuid:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<uuid:run_id>/delete/", views_data.run_delete_view, name="run_delete"),
    path("runs/<uuid:run_id>/status/", views.run_status, name="run_status"),
    path("rescore/", views.rescore_start, name="rescore_start"),
    path("batches/", views.batch_list, name="batch_list"),
    path("batches/<uuid:batch_id>/", views.batch_detail, name="batch_detail"),
    path("batches/<uuid:batch_id>/cancel/", views.batch_cancel_view, name="batch_cancel"),
    path("team/otel/", views_otel.otel_services, name="otel_services"),
    path("team/otel/save/", views_otel.otel_service_save, name="otel_service_save"),
    path("team/otel/remove/", views_otel.otel_service_remove, name="otel_service_remove"),
]
