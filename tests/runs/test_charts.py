"""The home page's pass-rate chart: rubrics told apart by dash and marker as well as colour,
every point focusable with its value, and the numbers in a table."""

import re
from datetime import date, timedelta

from runs.templatetags.charts import column_chart, pass_rate_chart, pass_rate_table, series_swatch

DAYS = [date(2026, 11, 1) + timedelta(days=i) for i in range(5)]
SERIES = [
    {"id": 1, "name": "Support <quality>", "points": {DAYS[0]: (3, 4), DAYS[2]: (1, 2)}},
    {"id": 2, "name": "Tone", "points": {DAYS[1]: (2, 2)}},
]


def test_each_rubric_has_its_own_dash_and_marker_and_points_carry_their_value():
    svg = str(pass_rate_chart(DAYS, SERIES))
    assert 'stroke-dasharray=""' in svg and 'stroke-dasharray="7 4"' in svg
    assert (
        "<circle" in svg and "<rect" in svg
    )  # circle markers for one rubric, squares for the other
    assert svg.count('tabindex="0"') == 9  # 7-day rolling windows: 5 + 4 days with a rate
    assert "Support &lt;quality&gt; · 7 days to Nov 01: 3/4 passed (75%)" in svg
    assert "<quality>" not in svg
    assert str(series_swatch(0)) != str(series_swatch(1))


def test_the_table_lists_each_day_with_data_and_each_rubric():
    context = pass_rate_table(DAYS, SERIES)
    assert [r["day"] for r in context["rows"]] == DAYS
    assert context["rows"][0]["cells"] == [(3, 4), None]
    assert context["rows"][2]["cells"] == [(4, 6), (2, 2)]


def test_every_focusable_point_of_a_chart_is_named_with_its_day_and_value():
    charts = [
        str(pass_rate_chart(DAYS, SERIES)),
        str(column_chart(DAYS, [1200, 0, 35, 0, 7], "Judge tokens per <day>")),
    ]
    for svg in charts:
        focusable = re.findall(r"<[^>]* tabindex=\"0\"[^>]*>", svg)
        assert focusable
        for tag in focusable:
            label = re.search(r' aria-label="([^"]*)"', tag)
            assert label and re.search(r"\w{3} \d{2}: \S", label.group(1)), tag
    columns = re.findall(r' aria-label="([^"]*)"', charts[1])[1:]  # after the chart's own
    assert columns == [
        "Judge tokens per &lt;day&gt; · Nov 01: 1,200",
        "Judge tokens per &lt;day&gt; · Nov 03: 35",
        "Judge tokens per &lt;day&gt; · Nov 05: 7",
    ]


def test_a_version_marker_is_a_labelled_rule_on_its_day_with_its_words_escaped():
    marks = [{"day": DAYS[2], "name": "Support <quality>", "version": 3, "previous": 2}]
    svg = str(pass_rate_chart(DAYS, SERIES, markers=marks))
    words = "Support &lt;quality&gt; · Nov 03: v3 took over from v2"
    assert f'class="version-mark" tabindex="0" role="img" aria-label="{words}"' in svg
    assert ">v3</text>" in svg and "<quality>" not in svg
    assert f"over time; {words}" in svg  # the chart's own name tells the change too
    # A marker outside the window is left out; without markers there is no marker group.
    outside = [dict(marks[0], day=DAYS[0] - timedelta(days=1))]
    assert 'version-mark"' not in str(pass_rate_chart(DAYS, SERIES, markers=outside))
    assert "version-marks" not in str(pass_rate_chart(DAYS, SERIES))
