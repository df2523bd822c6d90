"""Graded examples in the rubric editor: edit or delete one of the draft's examples (they are
added from the review page, reviews.views_examples)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from teams.access import TeamRequest, editor_required

from .examples import example_delete, example_update
from .services import RubricValidationError
from .views_common import redirect_after_post, rubric_or_404


@editor_required
@require_POST
def rubric_example(request: TeamRequest, rubric_id: Any, example_id: Any) -> HttpResponse:
    """Edit (``op=save``: excerpt, reason, verdict) or delete (``op=delete``) one of the
    draft's graded examples; the next saved version publishes the change."""
    rubric = rubric_or_404(request, rubric_id)
    url = reverse("rubric_detail", args=[rubric.id]) + "#examples"
    if request.POST.get("op") == "delete":
        done = example_delete(rubric=rubric, example_id=example_id)
        said = "Example removed: the next saved version leaves it out."
    else:
        verdict = {"true": True, "false": False}.get(request.POST.get("satisfied", ""))
        try:
            updated = example_update(
                rubric=rubric,
                example_id=example_id,
                excerpt=request.POST.get("excerpt", ""),
                reason=request.POST.get("reason", ""),
                satisfied=verdict,
            )
        except RubricValidationError as exc:
            said = "; ".join(f"{field}: {message}" for field, message in exc.errors.items())
            messages.error(request, f"Example not saved: {said}")
            return redirect_after_post(request, url)
        done = updated is not None
        said = "Example saved: the next saved version takes it."
    if not done:
        raise Http404("No such example in this rubric")
    messages.success(request, said)
    return redirect_after_post(request, url)
