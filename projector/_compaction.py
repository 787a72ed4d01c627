"""When to merge small archive segments into bigger ones.

The projector commits a segment per batch (about a second's events), so a long crawl makes
thousands of small files; readers pay per file. Runs of small consecutive segments are
merged into one, committed like any other change (new file, then manifest), after which
the old files are deleted.

Merges are size-tiered: a run is merged once ``MIN_RUN`` segments of about the same size
have gathered at its newest end, so a merged segment waits for enough others of its size
rather than taking in every few new ones. Merging each new handful into the last merged
segment rewrote that segment again and again: a crawl committing 500 events a second
wrote every event about sixteen times before its segment stopped being small, and the
slower the crawl, the more. Tiered, an event is rewritten about once per eightfold growth
of its segment (``tools/bench_compaction.py`` counts both).
"""

from __future__ import annotations

from collections.abc import Sequence

from projector._archive import SegmentInfo

SMALL_SEGMENT_EVENTS = 100_000
"""A segment smaller than this is worth merging."""
TARGET_SEGMENT_EVENTS = 1_000_000
"""A merge stops growing a segment past this."""
MIN_RUN = 8
"""Merge only runs of at least this many small segments: fewer are not worth a rewrite."""
SIZE_SPREAD = 4
"""A segment more than this many times bigger than every newer one of a run ends the run:
it waits for newer ones of its own size (commits' sizes vary that much and still merge)."""
MAX_SMALL_BEHIND = 32
"""Small segments a projector that is behind the log lets pile up before it merges anyway."""
MAX_SMALL_SEGMENTS = 64
"""Small segments past which the oldest run of two or more is merged whatever their sizes:
runs shorter than ``MIN_RUN`` between big segments (a projector catching up commits big
ones) would otherwise pile up without end."""


def plan(segments: Sequence[SegmentInfo], *, behind: bool = False) -> tuple[int, int] | None:
    """The ``[start, end)`` index range of a run of small segments to merge, if any: the
    newest run of ``MIN_RUN`` or more of about the same size (see ``SIZE_SPREAD``).

    A projector ``behind`` the log merges only once ``MAX_SMALL_BEHIND`` small segments
    have piled up: a merge rewrites every event once more, the CPU that catching up needs,
    and the merge costs no more when it is done later, once the projector has caught up.
    """
    sizes = [s.events for s in segments]
    small = sum(n < SMALL_SEGMENT_EVENTS for n in sizes)
    if behind and small < MAX_SMALL_BEHIND:
        return None
    end = len(sizes)
    while end > 0:
        start = _tier_start(sizes, end)
        if end - start >= MIN_RUN:
            return start, end
        end = start if start < end else end - 1
    if small >= MAX_SMALL_SEGMENTS:
        return _first_run(sizes, 2)
    return None


def _tier_start(sizes: Sequence[int], end: int) -> int:
    """Where the run of small segments ending at ``end`` starts: going back from its newest,
    up to a segment that is not small, far bigger than the run's biggest, or would take
    the run past ``TARGET_SEGMENT_EVENTS``."""
    start, total, largest = end, 0, 0
    while start > 0:
        events = sizes[start - 1]
        if events >= SMALL_SEGMENT_EVENTS or total + events > TARGET_SEGMENT_EVENTS:
            break
        if largest and events > SIZE_SPREAD * largest:
            break
        total += events
        largest = max(largest, events)
        start -= 1
    return start


def _first_run(sizes: Sequence[int], min_run: int) -> tuple[int, int] | None:
    """The oldest run of ``min_run`` or more small segments, whatever their sizes."""
    start = 0
    while start < len(sizes):
        end, total = start, 0
        while (
            end < len(sizes)
            and sizes[end] < SMALL_SEGMENT_EVENTS
            and total + sizes[end] <= TARGET_SEGMENT_EVENTS
        ):
            total += sizes[end]
            end += 1
        if end - start >= min_run:
            return start, end
        start = max(end, start + 1)
    return None
