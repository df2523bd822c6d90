from django.urls import path

from . import views

urlpatterns = [
    path("rubrics/", views.rubric_list, name="rubric_list"),
]
