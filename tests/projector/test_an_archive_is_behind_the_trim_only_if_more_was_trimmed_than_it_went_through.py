"""Crawlog removes events from the log only by trimming, each at or below a commit: an
archive lacks events exactly when more were trimmed than it went through (archived, or
skipped as dead letters)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from projector._continuity import behind_the_trim


@given(
    appended=st.integers(0, 10_000),
    read=st.integers(0, 10_000),
    dead=st.integers(0, 100),
    trimmed=st.integers(0, 10_000),
)
def test_an_archive_is_behind_the_trim_only_if_more_was_trimmed_than_it_went_through(
    appended: int, read: int, dead: int, trimmed: int
) -> None:
    # An archive that read the first ``read`` entries, ``dead`` of them undecodable; the log
    # trimmed of its first ``trimmed``.
    read, trimmed = min(read, appended), min(trimmed, appended)
    dead = min(dead, read)
    lacks = trimmed > read
    assert behind_the_trim(read - dead, dead, appended, appended - trimmed) == lacks
