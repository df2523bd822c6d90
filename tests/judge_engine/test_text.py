"""Criteria text, criteria objects, where criteria come from, and the texts taken from a run."""

from __future__ import annotations

import pytest

from judge_engine import Criterion
from judge_engine.text import (
    BLANK,
    HEADING,
    NO_TEXT,
    coerce_criteria,
    count_criteria,
    output_text,
    parse_criteria,
    parse_lines,
    resolve_criteria,
    system_text,
    task_text,
)


def descriptions(criteria: list[Criterion]) -> list[str]:
    return [c.description for c in criteria]


# --- parse_criteria ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "- Mentions the refund",
        "* Mentions the refund",
        "• Mentions the refund",
        "+ Mentions the refund",
        "1. Mentions the refund",
        "12. Mentions the refund",
        "1) Mentions the refund",
        "a) Mentions the refund",
        "(1) Mentions the refund",
        "- [ ] Mentions the refund",
        "- [x] Mentions the refund",
        "- [X] Mentions the refund",
        "* [ ] Mentions the refund",
        "Mentions the refund",
        "   -\tMentions the refund   ",
    ],
)
def test_one_leading_list_marker_is_removed(line):
    assert descriptions(parse_criteria(line)) == ["Mentions the refund"]


@pytest.mark.parametrize(
    "line",
    ["1.5 GB limit respected", "*emphasis* text", "-dash without space", "a)b stays", "(1)x stays"],
)
def test_a_marker_not_followed_by_whitespace_is_kept_as_text(line):
    assert descriptions(parse_criteria(line)) == [line]


def test_only_one_marker_is_removed():
    assert descriptions(parse_criteria("- - nested dash")) == ["- nested dash"]


def test_a_checkbox_without_whitespace_after_it_is_not_a_checkbox():
    assert descriptions(parse_criteria("- [x]done")) == ["[x]done"]


def test_blank_lines_and_markdown_headings_are_dropped():
    text = (
        "# Support rubric\n\n- Mentions the refund\n   \n## Tone\n### \n- Is polite\n#hashtag stays"
    )
    assert descriptions(parse_criteria(text)) == [
        "Mentions the refund",
        "Is polite",
        "#hashtag stays",
    ]


@pytest.mark.parametrize(
    ("line", "required"),
    [
        ("- [optional] Says thanks", False),
        ("- (optional) Says thanks", False),
        ("- [OPTIONAL] Says thanks", False),
        ("- (Optional)Says thanks", False),
        ("- [required] Says thanks", True),
        ("- (REQUIRED) Says thanks", True),
        ("- Says thanks", True),
    ],
)
def test_a_leading_optional_or_required_tag_sets_required_and_is_removed(line, required):
    (criterion,) = parse_criteria(line)
    assert (criterion.description, criterion.required) == ("Says thanks", required)


_OPTIONAL_TAGS = [
    f"{left}{word}{right}"
    for word in ("optional", "Optional", "OPTIONAL", "可選", "可选", "選填", "选填")
    for left, right in (
        ("[", "]"),
        ("(", ")"),
        ("［", "］"),
        ("（", "）"),
        ("【", "】"),
        ("「", "」"),
    )
]


@pytest.mark.parametrize("tag", _OPTIONAL_TAGS)
@pytest.mark.parametrize(
    "template",
    [
        "{tag} - Cites sources",
        "- {tag} Cites sources",
        "- Cites sources {tag}",
        "Cites sources{tag}",
    ],
    ids=["before-marker", "after-marker", "trailing", "trailing-unspaced"],
)
def test_every_listed_optional_tag_in_every_position_makes_the_criterion_optional(tag, template):
    (criterion,) = parse_criteria(template.format(tag=tag))
    assert (criterion.description, criterion.required) == ("Cites sources", False)


@pytest.mark.parametrize(
    "line",
    ["[required] - Cites sources", "- (Required) Cites sources", "- Cites sources ［required］"],
)
def test_a_required_tag_is_accepted_in_the_same_places_and_is_the_default(line):
    (criterion,) = parse_criteria(line)
    assert (criterion.description, criterion.required) == ("Cites sources", True)


def test_the_chinese_seed_style_line_with_a_full_width_tag_is_optional():
    assert parse_criteria("1. 引用來源（選填）\n2. 【可选】 語氣禮貌") == [
        Criterion(id="c1", description="引用來源", required=False),
        Criterion(id="c2", description="語氣禮貌", required=False),
    ]


@pytest.mark.parametrize(
    "line",
    [
        "- Says [optional] thanks",  # in the middle of the line
        "- Says thanks [optional] now",
        "- Says thanks {optional}",  # not a listed bracket
        "- Says thanks [optional）",  # brackets that do not pair
        "- Says thanks (可能)",  # not a listed word
        "- Says thanks (optionally)",
    ],
)
def test_a_tag_elsewhere_or_in_another_form_is_just_text(line):
    (criterion,) = parse_criteria(line)
    assert criterion.required is True
    assert criterion.description == line.removeprefix("- ")


def test_only_one_tag_counts_the_leading_one_first():
    (criterion,) = parse_criteria("- [required] Says thanks (optional)")
    assert (criterion.description, criterion.required) == ("Says thanks (optional)", True)


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_lines_end_at_newline_crlf_and_carriage_return(end):
    assert descriptions(parse_criteria(f"- A{end}- B{end}{end}- C")) == ["A", "B", "C"]


@pytest.mark.parametrize(
    "separator",
    ["\u2028", "\u2029", "\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85"],
    ids=["u2028", "u2029", "form-feed", "vertical-tab", "x1c", "x1d", "x1e", "nel"],
)
def test_other_unicode_separators_do_not_end_a_line_and_stay_as_spaces(separator):
    text = f"- Mentions the refund{separator}and the date\n- B"
    assert descriptions(parse_criteria(text)) == ["Mentions the refund and the date", "B"]
    assert count_criteria(text) == 2


def test_a_leading_byte_order_mark_is_dropped():
    assert descriptions(parse_criteria("\ufeff- A\n- B")) == ["A", "B"]
    assert descriptions(parse_criteria("\ufeff# Heading\n- A")) == ["A"]


def test_count_criteria_agrees_with_parse_criteria():
    text = "\ufeff# H\r\n- A (optional)\r- [ ] B\x85C\n\n-\n[optional]\n1.5 GB"
    assert count_criteria(text) == len(parse_criteria(text)) == 3


def test_parse_lines_says_what_every_line_became():
    lines = parse_lines("# Checklist\n\n- Cites sources (optional)\n- [optional]\n1. Is polite")
    assert [
        (line.number, line.text, line.description, line.required, line.skipped) for line in lines
    ] == [
        (1, "# Checklist", None, True, HEADING),
        (2, "", None, True, BLANK),
        (3, "- Cites sources (optional)", "Cites sources", False, None),
        (4, "- [optional]", None, True, NO_TEXT),
        (5, "1. Is polite", "Is polite", True, None),
    ]


def test_a_line_holding_only_a_marker_or_a_tag_is_dropped():
    assert parse_criteria("-\n- [optional]\n1.\n- real one") == [
        Criterion(id="c1", description="real one")
    ]


def test_parsed_criteria_get_positional_ids_after_dropped_lines():
    criteria = parse_criteria("# Heading\n\n- first\n\n2) second\r\n• [optional] third")
    assert [(c.id, c.description, c.required) for c in criteria] == [
        ("c1", "first", True),
        ("c2", "second", True),
        ("c3", "third", False),
    ]


def test_empty_text_has_no_criteria():
    assert parse_criteria("") == []
    assert parse_criteria("\n \n# only a heading\n") == []


# --- coerce_criteria ---------------------------------------------------------------------------


def test_objects_are_required_unless_required_is_explicitly_false():
    criteria = coerce_criteria(
        [
            {"description": "a"},
            {"description": "b", "required": True},
            {"description": "c", "required": False},
            {"description": "d", "required": None},
            {"description": "e", "required": 0},
        ]
    )
    assert [c.required for c in criteria] == [True, True, False, True, True]


def test_objects_keep_their_ids_and_the_others_get_positional_ones():
    criteria = coerce_criteria([{"id": "tone", "description": "a"}, {"description": "b"}])
    assert [c.id for c in criteria] == ["tone", "c2"]


def test_a_positional_id_that_clashes_with_an_explicit_one_is_rejected():
    with pytest.raises(ValueError, match="'c2' is already taken"):
        coerce_criteria([{"id": "c2", "description": "a"}, {"description": "b"}])


def test_duplicate_explicit_ids_are_rejected():
    with pytest.raises(ValueError, match="'x' is used twice"):
        coerce_criteria([{"id": "x", "description": "a"}, {"id": "x", "description": "b"}])


def test_text_strings_criterion_objects_and_none_are_accepted():
    assert descriptions(coerce_criteria("- a\n- b")) == ["a", "b"]
    assert descriptions(coerce_criteria([Criterion(description="a"), "b "])) == ["a", "b"]
    assert coerce_criteria(None) == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([{"description": "ok"}, {"description": 5}], "criterion 1: description must be a string"),
        ([{"required": True}], "criterion 0: description must be a string"),
        ([{"description": "  "}], "criterion 0: description must not be blank"),
        (["ok", 42], "criterion 1: expected an object or a string, got int"),
        (42, "criteria must be text or a list, got int"),
    ],
)
def test_bad_criteria_are_rejected_naming_the_index(value, message):
    with pytest.raises(ValueError, match=message):
        coerce_criteria(value)


# --- resolve_criteria --------------------------------------------------------------------------

CONTEXT = {"rubric": "- from context"}
METADATA = {"rubric": [{"description": "from metadata", "required": False}]}
INPUT = {"messages": [], "rubric": "- from input"}


def test_the_configured_rubric_wins_when_it_has_a_criterion():
    criteria, source = resolve_criteria("- configured", CONTEXT, METADATA, INPUT)
    assert (descriptions(criteria), source) == (["configured"], "configured")


@pytest.mark.parametrize("empty", [None, "", "   \n ", [], "# just a heading"])
def test_then_the_request_context_metadata_and_input_in_that_order(empty):
    assert resolve_criteria(empty, CONTEXT, METADATA, INPUT)[1] == "request_context"
    assert resolve_criteria(empty, {"rubric": empty}, METADATA, INPUT)[1] == "metadata"
    criteria, source = resolve_criteria(empty, {}, {"rubric": empty}, INPUT)
    assert (descriptions(criteria), source) == (["from input"], "input")


def test_the_list_of_objects_form_keeps_required_false():
    criteria, source = resolve_criteria(None, {}, METADATA, None)
    assert source == "metadata"
    assert criteria == [Criterion(id="c1", description="from metadata", required=False)]


def test_no_criteria_anywhere_resolves_to_none():
    assert resolve_criteria(None, None, None, None) == ([], "none")
    assert resolve_criteria([], {"other": 1}, {"rubric": ""}, [{"role": "user"}]) == ([], "none")


class RequestContext:
    """Like the reference framework's request context: ``get`` and ``set``, not a dict."""

    def __init__(self, **values):
        self._values = dict(values)

    def get(self, key):
        return self._values.get(key)


def test_a_mapping_like_request_context_is_read_like_a_dict_never_as_no_rubric():
    criteria, source = resolve_criteria(None, RequestContext(rubric="- from context"))
    assert (descriptions(criteria), source) == (["from context"], "request_context")
    criteria, source = resolve_criteria(None, RequestContext(), RequestContext(rubric="- meta"))
    assert (descriptions(criteria), source) == (["meta"], "metadata")


def test_a_mapping_like_context_with_a_bad_rubric_is_an_error_not_no_rubric():
    with pytest.raises(ValueError, match="request context: criteria must be text or a list"):
        resolve_criteria(None, RequestContext(rubric=42))


def test_values_without_get_still_count_as_no_rubric():
    assert resolve_criteria(None, "rubric: - x", 42, ["- x"]) == ([], "none")


def test_an_invalid_rubric_value_says_where_it_came_from():
    with pytest.raises(ValueError, match="request context: criteria must be text or a list"):
        resolve_criteria(None, {"rubric": {"description": "a dict, not a list"}})


# --- texts of a run ----------------------------------------------------------------------------

MESSAGES = [
    {"role": "system", "content": "Be polite."},
    {"role": "developer", "content": [{"type": "text", "text": "Answer in English."}]},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Where is"},
            {"type": "image_url", "image_url": {}},
            {"type": "text", "text": "my refund?"},
        ],
    },
    {"role": "assistant", "content": "Let me check."},
    {"role": "user", "content": "Order 1234."},
    {"role": "system", "content": "   "},
]


def test_task_text_is_the_first_user_message_with_its_text_parts_joined():
    assert task_text(MESSAGES) == "Where is\nmy refund?"
    assert task_text("just a string") == "just a string"
    assert task_text([{"role": "system", "content": "x"}]) == ""
    assert task_text(None) == ""


def test_system_text_joins_every_non_empty_system_message_with_a_blank_line():
    assert system_text(MESSAGES) == "Be polite.\n\nAnswer in English."
    assert system_text([{"role": "user", "content": "hi"}]) == ""


def test_output_text_is_the_last_assistant_message_with_text():
    output = [
        {"role": "assistant", "content": "first"},
        {"role": "tool", "content": "tool result"},
        {"role": "assistant", "content": [{"type": "text", "text": "second"}]},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "assistant", "content": "  "},
    ]
    assert output_text(output) == "second"
    assert output_text("plain output") == "plain output"
    assert output_text({"role": "assistant", "text": "mastra style"}) == "mastra style"
    assert output_text([]) == ""
