from django.urls import path

from . import views, views_alerts, views_calibration, views_compare, views_review, views_suggest

app_name = "reviews"

urlpatterns = [
    path("alerts/", views_alerts.alerts, name="alerts"),
    path("alerts/rules/", views_alerts.alert_rule_new, name="alert_rule_new"),
    path("alerts/rules/<uuid:rule_id>/", views_alerts.alert_rule_edit, name="alert_rule_edit"),
    path(
        "alerts/rules/<uuid:rule_id>/delete/",
        views_alerts.alert_rule_remove,
        name="alert_rule_delete",
    ),
    path("<uuid:rubric_id>/", views.queue, name="queue"),
    path("<uuid:rubric_id>/next/", views.queue_next, name="next"),
    path("<uuid:rubric_id>/runs/<uuid:run_id>/", views_review.review, name="review"),
    path(
        "<uuid:rubric_id>/runs/<uuid:run_id>/verdict/", views_review.review_verdict, name="verdict"
    ),
    path(
        "<uuid:rubric_id>/runs/<uuid:run_id>/alignment/",
        views_review.review_alignment,
        name="alignment",
    ),
    path("<uuid:rubric_id>/runs/<uuid:run_id>/revert/", views_review.review_revert, name="revert"),
    path(
        "<uuid:rubric_id>/runs/<uuid:run_id>/example/", views_review.review_example, name="example"
    ),
    path(
        "<uuid:rubric_id>/runs/<uuid:run_id>/golden/",
        views_review.review_golden,
        name="golden_mark",
    ),
    path("<uuid:rubric_id>/agreement/", views.agreement, name="agreement"),
    path("<uuid:rubric_id>/export.<str:fmt>", views.export, name="export"),
    path("<uuid:rubric_id>/golden/", views_calibration.golden, name="golden"),
    path("<uuid:rubric_id>/golden/start/", views_calibration.golden_start, name="golden_start"),
    path("<uuid:rubric_id>/consistency/", views_calibration.consistency, name="consistency"),
    path(
        "<uuid:rubric_id>/consistency/start/",
        views_calibration.consistency_start,
        name="consistency_start",
    ),
    path("<uuid:rubric_id>/flags/", views.rubric_flags, name="rubric_flags"),
    path("calibrations/<uuid:calibration_id>/", views_calibration.calibration, name="calibration"),
    path("runs/<uuid:run_id>/panel/", views.run_panel, name="run_panel"),
    # Comparisons and the publishing gate (reviews.views_compare).
    path("comparisons/<uuid:comparison_id>/", views_compare.comparison, name="comparison"),
    path(
        "comparisons/<uuid:comparison_id>/export.<str:fmt>",
        views_compare.comparison_export,
        name="comparison_export",
    ),
    path("<uuid:rubric_id>/compare/", views_compare.compare_start, name="compare_start"),
    path("<uuid:rubric_id>/gate/", views_compare.compare_panel, name="compare_panel"),
    path("<uuid:rubric_id>/gate/save/", views_compare.gate_save, name="gate_save"),
    path("<uuid:rubric_id>/versions/<int:number>/publish/", views_compare.publish, name="publish"),
    # Suggested criterion edits (reviews.views_suggest).
    path("<uuid:rubric_id>/suggestions/", views_suggest.suggestions, name="suggestions"),
    path("<uuid:rubric_id>/suggestions/ask/", views_suggest.suggest_start, name="suggest_start"),
    path(
        "<uuid:rubric_id>/suggestions/<uuid:suggestion_id>/accept/",
        views_suggest.suggestion_accept_view,
        name="suggestion_accept",
    ),
    path(
        "<uuid:rubric_id>/suggestions/<uuid:suggestion_id>/dismiss/",
        views_suggest.suggestion_dismiss_view,
        name="suggestion_dismiss",
    ),
]
