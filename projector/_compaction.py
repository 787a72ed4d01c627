"""When to merge small archive segments into bigger ones.

The projector commits a segment per batch (about a second's events), so a long crawl makes
thousands of small files; readers pay per file. Runs of small consecutive segments are
merged into one, committed like any other change (new file, then manifest), after which
the old files are deleted.
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
MAX_SMALL_BEHIND = 32
"""Small segments a projector that is behind the log lets pile up before it merges anyway."""


def plan(segments: Sequence[SegmentInfo], *, behind: bool = False) -> tuple[int, int] | None:
    """The ``[start, end)`` index range of the first run of small segments to merge, if any.

    A projector ``behind`` the log merges only once ``MAX_SMALL_BEHIND`` small segments
    have piled up: a merge rewrites every event once more, the CPU that catching up needs,
    and the merge costs no more when it is done later, once the projector has caught up.
    """
    if behind and sum(s.events < SMALL_SEGMENT_EVENTS for s in segments) < MAX_SMALL_BEHIND:
        return None
    start = 0
    while start < len(segments):
        end, total = start, 0
        while (
            end < len(segments)
            and segments[end].events < SMALL_SEGMENT_EVENTS
            and total + segments[end].events <= TARGET_SEGMENT_EVENTS
        ):
            total += segments[end].events
            end += 1
        if end - start >= MIN_RUN:
            return start, end
        start = max(end, start + 1)
    return None
