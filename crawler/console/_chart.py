"""Charts drawn on the server as SVG: nothing to load at run time, nothing to build.

Bars per minute, oldest on the left, the current minute on the right; a stacked bar
when a minute's count is split by reason, with a legend.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from html import escape

WIDTH = 600
HEIGHT = 120
MINUTES_SHOWN = 30
PALETTE = ("#3b7dd8", "#d8513b", "#e0a21b", "#5aa454", "#8a5cc2", "#888888")
"""Colours of the reasons of a stacked chart, in order of their totals."""


def bars_per_minute(
    counts: Mapping[int, int | Counter[str]], now_minute: int, *, title: str, unit: str
) -> str:
    """An SVG bar chart of the last ``MINUTES_SHOWN`` minutes up to ``now_minute``.

    ``counts``: minute (since the epoch) -> a count, or counts by reason (stacked).
    """
    minutes = list(range(now_minute - MINUTES_SHOWN + 1, now_minute + 1))
    split = {m: _as_counter(counts.get(m, 0)) for m in minutes}
    totals = Counter[str]()
    for by_reason in split.values():
        totals.update(by_reason)
    reasons = [r for r, _ in totals.most_common()]
    colour = {r: PALETTE[min(i, len(PALETTE) - 1)] for i, r in enumerate(reasons)}
    highest = max((sum(c.values()) for c in split.values()), default=0)
    peak = highest or 1
    said = (
        f"peak {highest} {escape(unit)}/min"
        if highest
        else f"no {escape(unit)} in {MINUTES_SHOWN} min"
    )
    bar_w = WIDTH / MINUTES_SHOWN
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'viewBox="0 0 {WIDTH} {HEIGHT + 20}" width="{WIDTH}" height="{HEIGHT + 20}">',
        f"<title>{escape(title)}</title>",
        f'<text x="0" y="12" font-size="11">{escape(title)} ({said})</text>',
    ]
    for n, minute in enumerate(minutes):
        y = float(HEIGHT + 18)
        for reason in reasons:
            value = split[minute].get(reason, 0)
            if not value:
                continue
            h = value / peak * (HEIGHT - 20)
            y -= h
            parts.append(
                f'<rect x="{n * bar_w + 1:.1f}" y="{y:.1f}" width="{bar_w - 2:.1f}" '
                f'height="{h:.1f}" fill="{colour[reason]}"><title>{value} {escape(reason)}'
                "</title></rect>"
            )
    parts.append(f'<line x1="0" y1="{HEIGHT + 18}" x2="{WIDTH}" y2="{HEIGHT + 18}" stroke="#999"/>')
    parts.append("</svg>")
    if len(reasons) > 1 or (reasons and reasons[0]):
        legend = " ".join(
            f'<span class="swatch" style="background:{colour[r]}"></span>{escape(r)} ({totals[r]})'
            for r in reasons
        )
        parts.append(f'<div class="legend">{legend}</div>')
    return "".join(parts)


def _as_counter(value: int | Counter[str]) -> Counter[str]:
    return value if isinstance(value, Counter) else Counter({"": value} if value else {})
