"""Judge instructions and graded examples belong to rubric versions: services, the API, the
editor (instructions in the draft, examples listed, edited and deleted), the diff, and the
worker judging with them (fake judge over HTTP, verdict reuse across versions)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from rubrics.examples import example_add, example_delete, example_update
from rubrics.models import CriterionExample, Rubric
from rubrics.services import RubricValidationError, rubric_set_criteria, rubric_update
from runs.models import AgentRun, CriterionVerdict
from tests.api_client import field_locs
from tests.conftest import SUPPORT_CRITERIA
from tests.fake_judge import boundary_of, section
from tests.page_helpers import judge_pending, signed_in
from tests.rubrics.test_views import current_rows, draft_post

pytestmark = pytest.mark.django_db


def numbers(rubric: Rubric) -> list[int]:
    return list(rubric.versions.order_by("number").values_list("number", flat=True))


def taught(rubric: Rubric) -> list[tuple[str, str, bool, str]]:
    rubric.refresh_from_db()
    rows = CriterionExample.objects.filter(version=rubric.current_version).order_by("position")
    return [(e.criterion_key, e.excerpt, e.satisfied, e.reason) for e in rows]


def add(rubric: Rubric, key: str = "c1", excerpt: str = "Refund sent.", **kw) -> CriterionExample:
    kw.setdefault("satisfied", True)
    kw.setdefault("reason", "names the refund")
    return example_add(rubric=rubric, criterion_key=key, excerpt=excerpt, **kw)


# --- Instructions: services and API --------------------------------------------------------------


def test_instructions_make_a_new_version_and_the_same_instructions_make_nothing(make_rubric):
    rubric = make_rubric(criteria="- A\n- B")

    rubric_update(rubric=rubric, instructions="  Typos **do not** matter.  ")
    rubric.refresh_from_db()
    assert numbers(rubric) == [1, 2]
    assert rubric.current_version.instructions == "Typos **do not** matter."
    assert rubric.current_version.note == "Instructions changed"
    assert [c.key for c in rubric.current_version.criteria.all()] == ["c1", "c2"]

    rubric_update(rubric=rubric, instructions="Typos **do not** matter.")
    _, created = rubric_set_criteria(rubric=rubric, criteria="- A\n- B")
    assert not created and numbers(rubric) == [1, 2]
    # A criteria change keeps the instructions.
    rubric_set_criteria(rubric=rubric, criteria="- A\n- C")
    rubric.refresh_from_db()
    assert rubric.current_version.instructions == "Typos **do not** matter."


def test_instructions_over_the_limit_are_refused_naming_the_field_and_the_limit(make_rubric):
    rubric = make_rubric(criteria="- A")
    with pytest.raises(RubricValidationError) as caught:
        rubric_update(rubric=rubric, instructions="x" * 4001)
    assert caught.value.errors == {"instructions": "at most 4,000 characters (got 4,001)"}
    assert numbers(rubric) == [1]


def test_the_api_takes_instructions_on_post_patch_and_put_and_answers_them(api):
    created = api.post(
        "/rubrics", {"name": "Support", "criteria": "- A", "instructions": "Be strict."}
    )
    assert created.status_code == 201, created.content
    assert created.json()["current_version"]["instructions"] == "Be strict."

    patched = api.patch("/rubrics/support", {"instructions": "Be lenient."})
    assert patched.status_code == 200
    version = patched.json()["current_version"]
    assert (version["number"], version["instructions"]) == (2, "Be lenient.")
    assert version["examples"] == []

    put = api.put("/rubrics/support/criteria", {"criteria": "- A", "instructions": "Be fair."})
    assert put.status_code == 201 and put.json()["instructions"] == "Be fair."
    same = api.put("/rubrics/support/criteria", {"criteria": "- A"})
    assert same.status_code == 200 and same.json()["number"] == 3


@pytest.mark.parametrize("method", ["post", "patch", "put"])
def test_too_long_instructions_are_a_422_naming_the_field_and_the_limit(api, make_rubric, method):
    make_rubric(name="Support", slug="support", criteria="- A")
    long = "x" * 4001
    response = {
        "post": lambda: api.post(
            "/rubrics", {"name": "N", "criteria": "- A", "instructions": long}
        ),
        "patch": lambda: api.patch("/rubrics/support", {"instructions": long}),
        "put": lambda: api.put(
            "/rubrics/support/criteria", {"criteria": "- A", "instructions": long}
        ),
    }[method]()
    assert response.status_code == 422, response.content
    assert [loc[-1] for loc in field_locs(response)] == ["instructions"]
    assert "4,000" in json.dumps(response.json())


# --- Examples: the draft and publishing ------------------------------------------------------------


def test_an_added_example_waits_in_the_draft_until_a_version_publishes_it(make_rubric):
    rubric = make_rubric(criteria="- A\n- B")
    add(rubric, "c2", "Go away.", satisfied=False, reason="rude")

    assert taught(rubric) == [] and numbers(rubric) == [1]
    version, created = rubric_set_criteria(rubric=rubric, criteria="- A\n- B")
    assert created and version.number == 2 and version.note == "Examples: 0 → 1"
    assert taught(rubric) == [("c2", "Go away.", False, "rude")]
    # Publishing cleared the draft; the same criteria again create nothing.
    assert not CriterionExample.objects.filter(rubric=rubric, version__isnull=True).exists()
    _, again = rubric_set_criteria(rubric=rubric, criteria="- A\n- B")
    assert not again


def test_older_versions_keep_their_examples_and_a_removed_criterion_drops_its_own(make_rubric):
    rubric = make_rubric(criteria="- A\n- B")
    add(rubric, "c1")
    add(rubric, "c2", "Go away.")
    rubric_set_criteria(rubric=rubric, criteria="- A\n- B")
    v2 = rubric.current_version

    rubric_set_criteria(rubric=rubric, criteria="- A")  # c2 removed
    assert [k for k, *_ in taught(rubric)] == ["c1"]
    assert CriterionExample.objects.filter(version=v2).count() == 2


def test_editing_or_deleting_an_example_changes_the_draft_not_the_version(make_rubric):
    rubric = make_rubric(criteria="- A")
    first = add(rubric)
    rubric_set_criteria(rubric=rubric, criteria="- A")
    published = CriterionExample.objects.get(version=rubric.current_version)

    edited = example_update(
        rubric=rubric, example_id=published.id, excerpt="Refund of $5 sent.", reason="amount"
    )
    assert edited is not None and edited.version_id is None and edited.id != first.id
    assert taught(rubric) == [("c1", "Refund sent.", True, "names the refund")]
    rubric_set_criteria(rubric=rubric, criteria="- A")
    assert taught(rubric) == [("c1", "Refund of $5 sent.", True, "amount")]
    assert rubric.current_version.note == "Examples edited"

    current = CriterionExample.objects.get(version=rubric.current_version)
    assert example_delete(rubric=rubric, example_id=current.id)
    version, created = rubric_set_criteria(rubric=rubric, criteria="- A")
    assert created and version.note == "Examples: 1 → 0" and taught(rubric) == []


def test_bad_examples_are_refused_naming_the_field(make_rubric, settings):
    settings.EVALSITE_MAX_EXAMPLES_PER_CRITERION = 2
    rubric = make_rubric(criteria="- A")
    cases = [
        ({"excerpt": "x" * 2001}, {"excerpt": "at most 2,000 characters (got 2,001)"}),
        ({"excerpt": "  "}, {"excerpt": "must not be blank"}),
        ({"reason": "y" * 1001}, {"reason": "at most 1,000 characters (got 1,001)"}),
        ({"key": "c9"}, {"criterion": "no criterion 'c9' in the current version"}),
    ]
    for changes, errors in cases:
        with pytest.raises(RubricValidationError) as caught:
            add(rubric, **changes)
        assert caught.value.errors == errors
    add(rubric)
    add(rubric)
    with pytest.raises(
        RubricValidationError, match="EVALSITE_MAX_EXAMPLES_PER_CRITERION"
    ) as caught:
        add(rubric)
    assert list(caught.value.errors) == ["criterion"]


def test_an_example_whose_run_is_deleted_keeps_its_excerpt(make_rubric, make_run):
    rubric = make_rubric(criteria="- A")
    run = make_run(rubric=rubric.slug)
    add(rubric, run_id=run.pk)
    rubric_set_criteria(rubric=rubric, criteria="- A")

    AgentRun.objects.filter(pk=run.pk).delete()
    example = CriterionExample.objects.get(version=rubric.current_version)
    assert example.run_id is None and example.excerpt == "Refund sent."


# --- The editor --------------------------------------------------------------------------------


def test_the_editor_saves_instructions_with_the_draft_and_the_diff_shows_them(
    make_rubric, teammate
):
    rubric = make_rubric(criteria="- A")
    client = signed_in(teammate)
    url = reverse("rubric_criteria", args=[rubric.id])

    response = client.post(
        url, draft_post(rubric, current_rows(rubric), "save", instructions="Be <b>strict</b>.")
    )
    assert response.status_code == 302
    rubric.refresh_from_db()
    assert rubric.current_version.instructions == "Be <b>strict</b>."

    page = client.get(reverse("rubric_detail", args=[rubric.id]) + "?a=1&b=2").content.decode()
    assert 'data-testid="diff-instructions"' in page
    assert "Be &lt;b&gt;strict&lt;/b&gt;." in page and "Be <b>strict</b>." not in page

    too_long = client.post(
        url, draft_post(rubric, current_rows(rubric), "save", instructions="x" * 4001)
    )
    assert too_long.status_code == 200 and "4000 characters" in too_long.content.decode()
    assert numbers(rubric) == [1, 2]


def test_the_editor_lists_edits_and_deletes_the_drafts_examples(make_rubric, teammate):
    rubric = make_rubric(criteria="- A")
    example = add(rubric, excerpt="<script>x</script> sent")
    client = signed_in(teammate)
    page = client.get(reverse("rubric_detail", args=[rubric.id])).content.decode()
    assert 'data-testid="examples-pending"' in page
    assert "&lt;script&gt;x&lt;/script&gt; sent" in page and "<script>x</script>" not in page

    url = reverse("rubric_example", args=[rubric.id, example.id])
    saved = client.post(
        url, {"op": "save", "excerpt": "Refund sent", "reason": "ok", "satisfied": "false"}
    )
    assert saved.status_code == 302
    example.refresh_from_db()
    assert (example.excerpt, example.reason, example.satisfied) == ("Refund sent", "ok", False)

    refused = client.post(url, {"op": "save", "excerpt": "x" * 2001, "reason": "ok"}, follow=True)
    assert "excerpt: at most 2,000 characters" in refused.content.decode()

    assert client.post(url, {"op": "delete"}).status_code == 302
    assert not CriterionExample.objects.filter(rubric=rubric).exists()
    assert client.post(url, {"op": "delete"}).status_code == 404


def test_examples_of_another_team_or_for_a_viewer_are_out_of_reach(make_rubric, stranger, viewer):
    rubric = make_rubric(criteria="- A")
    example = add(rubric)
    url = reverse("rubric_example", args=[rubric.id, example.id])
    assert signed_in(stranger).post(url, {"op": "delete"}).status_code == 404
    assert signed_in(viewer).post(url, {"op": "delete"}).status_code == 403
    assert CriterionExample.objects.filter(pk=example.pk).exists()


# --- Judging with them ---------------------------------------------------------------------------


def test_workers_judge_with_the_versions_instructions_and_examples_and_reuse_only_same_keys(
    make_rubric, make_run, fake_judge
):
    rubric = make_rubric(criteria=SUPPORT_CRITERIA, alignment_mode="off")
    output = {"output": "Your refund for order number 1234 was sent today, thanks for waiting."}
    judge_pending(make_run(rubric=rubric.slug, **output))
    judged = fake_judge.stats()["criteria_judged"]

    # Instructions: a new version whose keys all differ: every criterion is judged again.
    rubric_update(rubric=rubric, instructions="Typos do not matter.")
    second = judge_pending(make_run(rubric=rubric.slug, **output))
    assert fake_judge.stats()["criteria_judged"] == judged + 3
    body = fake_judge.last_request()
    boundary = boundary_of(body["messages"])
    assert (
        section(body["messages"][1]["content"], "instructions", boundary) == "Typos do not matter."
    )

    # The same version and texts: every verdict reused, no judge call.
    judge_pending(make_run(rubric=rubric.slug, **output))
    assert fake_judge.stats()["criteria_judged"] == judged + 3

    # An example of c2: only c2 is judged again, with the example in the prompt.
    add(rubric, "c2", "Order 1234 refunded.", reason="names the order")
    rubric_set_criteria(rubric=rubric, criteria=SUPPORT_CRITERIA)
    judge_pending(make_run(rubric=rubric.slug, **output))
    assert fake_judge.stats()["criteria_judged"] == judged + 4
    body = fake_judge.last_request()
    boundary = boundary_of(body["messages"])
    (line,) = section(body["messages"][1]["content"], "examples", boundary).splitlines()
    assert json.loads(line) == {
        "criterion_id": "c2",
        "excerpt": "Order 1234 refunded.",
        "satisfied": True,
        "reason": "names the order",
    }
    keys = CriterionVerdict.objects.filter(run=second).values_list("verdict_key", flat=True)
    assert len(set(keys)) == 3
