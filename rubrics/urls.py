from django.urls import path

from . import views_editor as editor
from . import views_examples as examples
from . import views_failures as failures
from . import views_new as new
from . import views_working_copy as working_copy

urlpatterns = [
    path("rubrics/", new.rubric_list, name="rubric_list"),
    path("rubrics/new/", new.rubric_new, name="rubric_new"),
    path("rubrics/new/unsaved-edits/", new.rubric_new_input, name="rubric_new_input"),
    path(
        "rubrics/new/unsaved-edits/discard/",
        new.rubric_new_input_discard,
        name="rubric_new_input_discard",
    ),
    path("rubrics/<uuid:rubric_id>/", editor.rubric_detail, name="rubric_detail"),
    path("rubrics/<uuid:rubric_id>/criteria/", editor.rubric_criteria, name="rubric_criteria"),
    path("rubrics/<uuid:rubric_id>/settings/", editor.rubric_settings, name="rubric_settings"),
    path("rubrics/<uuid:rubric_id>/try/", editor.rubric_try_view, name="rubric_try"),
    path(
        "rubrics/<uuid:rubric_id>/unsaved-edits/",
        working_copy.rubric_working_copy,
        name="rubric_working_copy",
    ),
    path(
        "rubrics/<uuid:rubric_id>/unsaved-edits/discard/",
        working_copy.rubric_working_copy_discard,
        name="rubric_working_copy_discard",
    ),
    path(
        "rubrics/<uuid:rubric_id>/examples/<uuid:example_id>/",
        examples.rubric_example,
        name="rubric_example",
    ),
    path("failures/", failures.failures, name="failures"),
    path("failures/<uuid:rubric_id>/<str:key>/", failures.failures_walk, name="failures_walk"),
]
