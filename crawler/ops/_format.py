"""How the command line writes durations, tables, refetches and pages not judged: one way
for every command (and the console).

Both are plain text with no dependency, so the lightest command (and a worker) can use them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

UNKNOWN: Final = "-"
"""A duration not known (yet)."""
_MINUTE: Final = 60
_HOUR: Final = 60
_DAY: Final = 24
COLUMN_GAP: Final = "  "


def format_duration(seconds: float | None, *, tenths: bool = False) -> str:
    """``42s``, ``3m05s``, ``2h10m``, ``3d04h``; ``-`` when unknown.

    ``tenths``: under a minute, to a tenth of a second (``4.2s``), for ages that a lease or a
    poll measures in fractions of its few seconds.
    """
    if seconds is None:
        return UNKNOWN
    if tenths and round(seconds, 1) < _MINUTE:
        return f"{seconds:.1f}s"
    whole = round(seconds)
    if whole < _MINUTE:
        return f"{whole}s"
    minutes, secs = divmod(whole, _MINUTE)
    if minutes < _HOUR:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, _HOUR)
    if hours < _DAY:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, _DAY)
    return f"{days}d{hours:02d}h"


def table_lines(
    rows: Sequence[Sequence[str]],
    right: Sequence[bool] = (),
    indent: str = "",
    *,
    rule: bool = False,
) -> list[str]:
    """Rows as aligned columns, each line without trailing spaces.

    ``right`` says which columns are right-aligned (the rest, and any it does not cover, are
    left-aligned); ``rule`` draws a line of dashes under the first row, a header.
    """
    if not rows:
        return []
    count = len(rows[0])
    widths = [max(len(row[i]) for row in rows) for i in range(count)]
    aligned = [*right, *[False] * (count - len(right))][:count]

    def line(row: Sequence[str]) -> str:
        cells = zip(row, widths, aligned, strict=True)
        text = COLUMN_GAP.join(c.rjust(w) if r else c.ljust(w) for c, w, r in cells)
        return indent + text.rstrip()

    lines = [line(row) for row in rows]
    if rule:
        lines.insert(1, indent + COLUMN_GAP.join("-" * w for w in widths))
    return lines


def twice_phrase(requests: int) -> str:
    """``N requests may have reached the site twice``: refetches as the site may count them
    (``projector.Totals.requests_maybe_twice``), one wording for every command."""
    return f"{requests:,} request{'' if requests == 1 else 's'} may have reached the site twice"


def unjudged_phrase(failed: Mapping[str, int], still_open: int) -> str:
    """``N page(s), F failed (n reason, ...); O not ended yet``: a run's pages with no
    verdict (``projector.unjudged``), one wording for ``crawlog changes`` and the console."""
    parts = []
    if failed:
        reasons = ", ".join(f"{n} {why}" for why, n in sorted(failed.items()))
        parts.append(f"{sum(failed.values())} failed ({reasons})")
    if still_open:
        parts.append(f"{still_open} not ended yet")
    return f"{sum(failed.values()) + still_open} page(s), {'; '.join(parts)}"
