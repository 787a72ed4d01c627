"""Charts drawn on the server as SVG: nothing to load at run time, nothing to build, no
network (the console works offline).

Every chart covers the last ``MINUTES_SHOWN`` minutes up to the current one, on the same
frame: a time axis (UTC, a labelled tick every ``TIME_TICK_MIN`` minutes) and a value axis
(ticks at round values from zero, with grid lines), each with its title. Counts per minute
are bars, oldest on the left (stacked by reason, with a legend, when a minute's count is
split); values sampled over time (the queue, the ETA) are a line, broken where a value is
unknown.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from html import escape

WIDTH = 600
HEIGHT = 190
LEFT = 56
"""Room for the value axis's labels and title."""
RIGHT = 20
"""Room for half the last time label, at the end of the current minute."""
TOP = 24
"""Room for the chart's title."""
BOTTOM = 38
"""Room for the time axis's labels and title."""
PLOT_W = WIDTH - LEFT - RIGHT
PLOT_H = HEIGHT - TOP - BOTTOM
MINUTES_SHOWN = 30
TIME_TICK_MIN = 5
VALUE_TICKS = 4
"""Value-axis steps wanted (a round step gives three to five)."""
PALETTE = ("#3b7dd8", "#d8513b", "#e0a21b", "#5aa454", "#8a5cc2", "#888888")
"""Colours of the reasons of a stacked chart, in order of their totals."""

Label = Callable[[float], str]


def _count(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


def value_ticks(peak: float, wanted: int = VALUE_TICKS) -> list[float]:
    """Round values from 0 up to at least ``peak``: steps of 1, 2 or 5 times a power of ten
    (at least 1, and never fewer than two ticks)."""
    if peak <= 0:
        return [0.0, 1.0]
    raw = peak / wanted
    power = 10.0 ** math.floor(math.log10(raw))
    step = max(1.0, next(m * power for m in (1, 2, 5, 10) if m * power >= raw))
    top = math.ceil(peak / step - 1e-9) * step
    return [n * step for n in range(round(top / step) + 1)]


def minute_label(minute: int) -> str:
    """``HH:MM`` (UTC) of a minute since the epoch."""
    return dt.datetime.fromtimestamp(minute * 60, dt.UTC).strftime("%H:%M")


def _x(minute: float, first: int) -> float:
    return LEFT + (minute - first) / MINUTES_SHOWN * PLOT_W


def _y(value: float, top: float) -> float:
    return TOP + PLOT_H - value / top * PLOT_H


def _frame(title: str, said: str, ticks: list[float], axis: str, first: int, label: Label) -> str:
    """The chart's title and both axes, with their ticks, labels and titles."""
    top, bottom = ticks[-1], TOP + PLOT_H
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" font-size="11">',
        f"<title>{escape(title)}</title>",
        f'<text class="chart-title" x="{LEFT}" y="14">{escape(title)} ({escape(said)})</text>',
        '<g class="axis y-axis">',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}" stroke="#999"/>',
    ]
    for value in ticks:
        y = _y(value, top)
        parts.append(
            f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
            'stroke="#eee"/>'
            f'<text class="tick" x="{LEFT - 4}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(label(value))}</text>"
        )
    parts.append(
        f'<text class="axis-title" transform="translate(12 {TOP + PLOT_H / 2:.0f}) rotate(-90)" '
        f'text-anchor="middle">{escape(axis)}</text></g><g class="axis x-axis">'
        f'<line x1="{LEFT}" y1="{bottom}" x2="{WIDTH - RIGHT}" y2="{bottom}" stroke="#999"/>'
    )
    for minute in range(first, first + MINUTES_SHOWN + 1):
        if minute % TIME_TICK_MIN:
            continue
        x = _x(minute, first)
        parts.append(
            f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 4}" stroke="#999"/>'
            f'<text class="tick" x="{x:.1f}" y="{bottom + 15}" text-anchor="middle">'
            f"{minute_label(minute)}</text>"
        )
    parts.append(
        f'<text class="axis-title" x="{LEFT + PLOT_W / 2:.0f}" y="{HEIGHT - 4}" '
        'text-anchor="middle">time (UTC)</text></g>'
    )
    return "".join(parts)


def bars_per_minute(
    counts: Mapping[int, int | Counter[str]], now_minute: int, *, title: str, unit: str
) -> str:
    """An SVG bar chart of the last ``MINUTES_SHOWN`` minutes up to ``now_minute``.

    ``counts``: minute (since the epoch) -> a count, or counts by reason (stacked).
    """
    first = now_minute - MINUTES_SHOWN + 1
    minutes = list(range(first, now_minute + 1))
    split = {m: _as_counter(counts.get(m, 0)) for m in minutes}
    totals = Counter[str]()
    for by_reason in split.values():
        totals.update(by_reason)
    reasons = [r for r, _ in totals.most_common()]
    colour = {r: PALETTE[min(i, len(PALETTE) - 1)] for i, r in enumerate(reasons)}
    highest = max((sum(c.values()) for c in split.values()), default=0)
    said = f"peak {highest} {unit}/min" if highest else f"no {unit} in {MINUTES_SHOWN} min"
    ticks = value_ticks(highest)
    parts = [_frame(title, said, ticks, f"{unit}/min", first, _count)]
    bar_w = PLOT_W / MINUTES_SHOWN
    for minute in minutes:
        y = float(TOP + PLOT_H)
        for reason in reasons:
            value = split[minute].get(reason, 0)
            if not value:
                continue
            h = value / ticks[-1] * PLOT_H
            y -= h
            parts.append(
                f'<rect x="{_x(minute, first) + 1:.1f}" y="{y:.1f}" width="{bar_w - 2:.1f}" '
                f'height="{h:.1f}" fill="{colour[reason]}"><title>{value} {escape(reason)}'
                "</title></rect>"
            )
    parts.append("</svg>")
    if len(reasons) > 1 or (reasons and reasons[0]):
        legend = " ".join(
            f'<span class="swatch" style="background:{colour[r]}"></span>{escape(r)} ({totals[r]})'
            for r in reasons
        )
        parts.append(f'<div class="legend">{legend}</div>')
    return "".join(parts)


def line_over_time(
    points: Sequence[tuple[float, float | None]],
    now_s: float,
    *,
    title: str,
    axis: str,
    label: Label = _count,
    none_said: str,
) -> str:
    """An SVG line of values sampled over the last ``MINUTES_SHOWN`` minutes up to
    ``now_s``: ``points`` are (epoch seconds, value or None when unknown), oldest first; a
    None breaks the line, a lone point is a dot. ``none_said``: the title's note when no
    value is known."""
    first = int(now_s // 60) - MINUTES_SHOWN + 1
    shown = [(t, v) for t, v in points if t / 60 >= first]
    known = [v for _, v in shown if v is not None]
    said = f"now {label(known[-1])}" if shown and shown[-1][1] is not None else none_said
    ticks = value_ticks(max(known, default=0.0))
    parts = [_frame(title, said, ticks, axis, first, label)]
    runs: list[list[tuple[float, float]]] = [[]]
    for t, v in shown:
        if v is None:
            runs.append([])
        else:
            runs[-1].append((_x(t / 60, first), _y(v, ticks[-1])))
    for run in runs:
        if len(run) == 1:
            ((x, y),) = run
            parts.append(
                f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="#3b7dd8"/>'
            )
        elif run:
            xy = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
            parts.append(
                f'<polyline class="line" points="{xy}" fill="none" stroke="#3b7dd8" '
                'stroke-width="1.5"/>'
            )
    parts.append("</svg>")
    return "".join(parts)


def _as_counter(value: int | Counter[str]) -> Counter[str]:
    return value if isinstance(value, Counter) else Counter({"": value} if value else {})
