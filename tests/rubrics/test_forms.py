"""The rubric settings form shows the engine's scoring defaults, not copies of them."""

from judge_engine import DIMENSIONS, AlignmentWeights
from judge_engine.rules import DEFAULT_USER_SHARE
from rubrics.forms import PERSPECTIVES, _weights_initial


def test_a_rubric_without_weights_shows_the_engines_default_weights_and_user_share():
    defaults = AlignmentWeights()
    initial = _weights_initial(None)
    assert initial["custom_weights"] is False
    assert initial["user_share"] == DEFAULT_USER_SHARE
    for perspective in PERSPECTIVES:
        for dim in DIMENSIONS:
            expected = getattr(getattr(defaults, perspective), dim)
            assert initial[f"w_{perspective}_{dim}"] == expected


def test_the_form_edits_every_perspective_the_engine_weighs():
    assert set(PERSPECTIVES) == set(AlignmentWeights.model_fields) - {"user_share"}


def test_custom_weights_without_a_user_share_show_the_default_share():
    initial = _weights_initial({"user": {"intent": 1.0}})
    assert initial["custom_weights"] is True
    assert initial["user_share"] == DEFAULT_USER_SHARE
    assert initial["w_user_intent"] == 1.0 and initial["w_system_intent"] is None
