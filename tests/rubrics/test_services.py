"""Rubric writes: versions are immutable, criteria keys are stable, errors name the field."""

import pytest

from rubrics.models import Criterion
from rubrics.services import (
    RubricValidationError,
    rubric_create,
    rubric_set_criteria,
    rubric_update,
)


def criteria_of(version):
    return [(c.key, c.description, c.required) for c in version.criteria.order_by("position")]


def test_creating_a_rubric_from_text_makes_version_one_with_optional_criteria(team):
    rubric = rubric_create(team=team, name="Support", criteria="- Be kind\n- [optional] Say thanks")

    assert rubric.slug == "support"
    assert rubric.current_version.number == 1
    assert criteria_of(rubric.current_version) == [
        ("c1", "Be kind", True),
        ("c2", "Say thanks", False),
    ]


def test_saving_unchanged_criteria_creates_no_new_version(team):
    rubric = rubric_create(team=team, name="Support", criteria="- Be kind")

    version, created = rubric_set_criteria(rubric=rubric, criteria=[{"description": "Be kind"}])

    assert created is False and version.number == 1


def test_a_new_version_keeps_keys_of_unchanged_criteria_and_never_reuses_old_keys(team):
    rubric = rubric_create(team=team, name="Support", criteria="- A\n- B\n- C")
    v1 = rubric.current_version

    v2, created = rubric_set_criteria(rubric=rubric, criteria="- A\n- C\n- D")

    assert created and v2.number == 2
    assert criteria_of(v2) == [("c1", "A", True), ("c3", "C", True), ("c4", "D", True)]
    assert criteria_of(v1) == [("c1", "A", True), ("c2", "B", True), ("c3", "C", True)]
    rubric.refresh_from_db()
    assert rubric.current_version == v2


def test_rewording_a_criterion_under_its_explicit_key_keeps_the_key(team):
    rubric = rubric_create(team=team, name="Support", criteria="- A\n- B")

    v2, _ = rubric_set_criteria(
        rubric=rubric,
        criteria=[
            {"key": "c1", "description": "A, reworded", "required": True},
            {"key": "c2", "description": "B", "required": False},
        ],
    )

    assert criteria_of(v2) == [("c1", "A, reworded", True), ("c2", "B", False)]


def test_flipping_required_alone_makes_a_new_version(team):
    rubric = rubric_create(team=team, name="Support", criteria="- A")

    v2, created = rubric_set_criteria(rubric=rubric, criteria="- [optional] A")

    assert created and criteria_of(v2) == [("c1", "A", False)]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"scale": -1}, "scale"),
        ({"scale": "many"}, "scale"),
        ({"strategy": "sometimes"}, "strategy"),
        ({"alignment_mode": "sideways"}, "alignment_mode"),
        ({"judge_params": {"temperature": 9}}, "judge_params.temperature"),
        ({"judge_params": {"colour": "blue"}}, "judge_params.colour"),
        (
            {
                "alignment_weights": {
                    "user": {
                        "intent": 1,
                        "requirements": 1,
                        "completeness": 0,
                        "appropriateness": 0,
                    }
                }
            },
            "alignment_weights",
        ),
        ({"name": "  "}, "name"),
    ],
)
def test_invalid_settings_are_rejected_with_the_field_named(team, fields, field):
    rubric = rubric_create(team=team, name="Support", criteria="- A")

    with pytest.raises(RubricValidationError) as caught:
        rubric_update(rubric=rubric, **fields)

    assert field in caught.value.errors


def test_empty_and_blank_criteria_are_rejected(team):
    rubric = rubric_create(team=team, name="Support", criteria="- A")

    with pytest.raises(RubricValidationError) as caught:
        rubric_set_criteria(rubric=rubric, criteria="\n\n# only a heading\n")
    assert "criteria" in caught.value.errors

    with pytest.raises(RubricValidationError) as caught:
        rubric_set_criteria(rubric=rubric, criteria=[{"description": "   "}])
    assert "criteria" in " ".join(caught.value.errors)


def test_slugs_are_unique_per_team_not_globally(team, other_team):
    a = rubric_create(team=team, name="Support", criteria="- A")
    b = rubric_create(team=team, name="Support", criteria="- A")
    c = rubric_create(team=other_team, name="Support", criteria="- A")

    assert (a.slug, b.slug, c.slug) == ("support", "support-2", "support")
    assert Criterion.objects.filter(version__rubric__team=team).count() == 2
