"""The panel's charts, as SVG: a time axis with a UTC label every five minutes and its
title, a value axis from zero past the highest value with its round labels and title, bars
as tall as their counts, and a sampled line broken where its value is unknown."""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.console._chart import (
    MINUTES_SHOWN,
    PLOT_H,
    TIME_TICK_MIN,
    WIDTH,
    bars_per_minute,
    line_over_time,
    minute_label,
    value_ticks,
)
from crawler.ops import format_duration

NS = {"s": "http://www.w3.org/2000/svg"}
NOW_MINUTE = 29_000_007  # 2025-02-21 08:27 UTC


def _svg(html: str) -> ET.Element:
    found = re.search(r"<svg.*?</svg>", html, re.S)
    assert found is not None, html
    return ET.fromstring(found.group(0))


def _axis(svg: ET.Element, which: str) -> tuple[list[str], list[str]]:
    group = svg.find(f"s:g[@class='axis {which}']", NS)
    assert group is not None
    ticks = [t.text or "" for t in group.findall("s:text[@class='tick']", NS)]
    titles = [t.text or "" for t in group.findall("s:text[@class='axis-title']", NS)]
    return ticks, titles


def _time_axis_is_labelled(svg: ET.Element) -> None:
    labels, titles = _axis(svg, "x-axis")
    assert titles == ["time (UTC)"]
    first = NOW_MINUTE - MINUTES_SHOWN + 1
    expected = [
        minute_label(m) for m in range(first, first + MINUTES_SHOWN + 1) if m % TIME_TICK_MIN == 0
    ]
    assert labels == expected and len(labels) >= MINUTES_SHOWN // TIME_TICK_MIN
    assert all(re.fullmatch(r"\d\d:\d\d", label) for label in labels)


def test_a_bar_chart_has_both_axes_and_bars_as_tall_as_their_counts() -> None:
    counts: dict[int, int | Counter[str]] = {
        NOW_MINUTE: Counter({"HTTP 404": 3, "timeout": 4}),
        NOW_MINUTE - 10: Counter({"HTTP 404": 1}),
    }
    html = bars_per_minute(counts, NOW_MINUTE, title="failures per minute", unit="tasks")
    svg = _svg(html)
    _time_axis_is_labelled(svg)
    labels, titles = _axis(svg, "y-axis")
    assert titles == ["tasks/min"]
    assert labels[0] == "0" and float(labels[-1]) >= 7
    heights = {
        (r.findtext("s:title", namespaces=NS) or ""): float(r.get("height", "0"))
        for r in svg.findall("s:rect", NS)
    }
    assert set(heights) == {"3 HTTP 404", "4 timeout", "1 HTTP 404"}
    unit = PLOT_H / float(labels[-1])
    assert heights["4 timeout"] == round(4 * unit, 1)
    assert "HTTP 404 (4)" in html and "timeout (4)" in html  # the legend


def test_a_line_chart_breaks_where_a_value_is_unknown_and_labels_durations() -> None:
    now = NOW_MINUTE * 60 + 30
    points: list[tuple[float, float | None]] = [
        (now - 600, 300.0),
        (now - 590, 200.0),
        (now - 300, None),
        (now - 10, 90.0),
    ]
    svg = _svg(
        line_over_time(
            points, now, title="ETA", axis="time left", label=format_duration, none_said="-"
        )
    )
    _time_axis_is_labelled(svg)
    labels, titles = _axis(svg, "y-axis")
    assert titles == ["time left"] and labels[0] == "0s" and labels[-1] == "5m00s"
    assert len(svg.findall("s:polyline", NS)) == 1 and len(svg.findall("s:circle", NS)) == 1
    assert "now 1m30s" in (svg.findtext("s:text[@class='chart-title']", namespaces=NS) or "")


HALF_LABEL = 16
"""Half the width of an ``HH:MM`` label at the charts' font size, with room to spare."""


@pytest.mark.parametrize("now_minute", range(NOW_MINUTE, NOW_MINUTE + TIME_TICK_MIN))
def test_every_time_label_fits_in_its_chart_however_the_minutes_fall(now_minute: int) -> None:
    svg = _svg(bars_per_minute({}, now_minute, title="pages", unit="pages"))
    group = svg.find("s:g[@class='axis x-axis']", NS)
    assert group is not None
    xs = [float(t.get("x", "0")) for t in group.findall("s:text[@class='tick']", NS)]
    assert xs and all(HALF_LABEL <= x <= WIDTH - HALF_LABEL for x in xs), xs


@given(st.floats(0.01, 1e9))
def test_value_ticks_are_round_steps_from_zero_past_the_peak(peak: float) -> None:
    ticks = value_ticks(peak)
    step = ticks[1] - ticks[0]
    assert ticks[0] == 0 and ticks[-1] >= peak and 2 <= len(ticks) <= 6
    assert all(abs((b - a) - step) <= step * 1e-9 for a, b in itertools.pairwise(ticks))
    mantissa = step / 10 ** int(f"{step:e}".split("e")[1])
    assert round(mantissa, 6) in (1, 2, 5)
