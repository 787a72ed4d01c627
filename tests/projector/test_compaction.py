"""Small segments are merged into bigger ones without changing what the archive holds."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog import EventLog
from projector._archive import SegmentInfo, read_entries
from projector._compaction import (
    MAX_SMALL_BEHIND,
    MAX_SMALL_SEGMENTS,
    MIN_RUN,
    SMALL_SEGMENT_EVENTS,
    TARGET_SEGMENT_EVENTS,
    plan,
)
from projector._projector import Projector
from projector._segment_index import index_name
from projector._store import Store
from tests.projector.test_projector import task_events

pytestmark = pytest.mark.anyio


def segments(sizes: list[int]) -> list[SegmentInfo]:
    return [
        SegmentInfo(name=f"s{n}", first_id=f"{n}-0", last_id=f"{n}-1", events=e)
        for n, e in enumerate(sizes)
    ]


def test_a_run_of_small_segments_is_merged() -> None:
    assert plan(segments([10] * MIN_RUN)) == (0, MIN_RUN)
    assert plan(segments([10] * (MIN_RUN - 1))) is None


def test_big_segments_break_a_run() -> None:
    sizes = [10] * 3 + [SMALL_SEGMENT_EVENTS] + [10] * MIN_RUN
    assert plan(segments(sizes)) == (4, 4 + MIN_RUN)


@given(st.lists(st.integers(1, 2 * SMALL_SEGMENT_EVENTS), max_size=40))
def test_a_planned_run_is_long_enough_and_never_too_big(sizes: list[int]) -> None:
    run = plan(segments(sizes))
    if run is not None:
        start, end = run
        assert end - start >= MIN_RUN
        assert all(size < SMALL_SEGMENT_EVENTS for size in sizes[start:end])
        assert sum(sizes[start:end]) <= TARGET_SEGMENT_EVENTS


async def test_the_projector_compacts_its_archive_and_keeps_every_event_once(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> None:
    async with make_projector() as projector:
        for n in range(MIN_RUN + 2):  # one commit, so one segment, per round
            await log.append_many(task_events(n))
            await projector.catch_up()
    store = Store(data_dir, job)
    manifest = store.read_manifest()
    assert len(manifest.segments) < MIN_RUN
    assert sorted(p.name for p in store.archive.iterdir()) == sorted(
        name for s in manifest.segments for name in (s.name, index_name(s.name))
    )
    archived = [e for p in store.segment_paths(manifest) for e in read_entries(p)]
    assert [e.stream_id for e in archived] == [e.stream_id for e in await log.read_range()]


def test_a_projector_behind_the_log_lets_small_segments_pile_up_before_merging() -> None:
    few = segments([10] * (MAX_SMALL_BEHIND - 1))
    assert plan(few) == (0, len(few))
    assert plan(few, behind=True) is None
    many = segments([10] * MAX_SMALL_BEHIND)
    assert plan(many, behind=True) == (0, len(many))


def commit_all(sizes: list[int]) -> tuple[int, list[SegmentInfo]]:
    """Commit segments of ``sizes`` one by one, merging as the committer does after each
    (one merge at most);
    the events written in all (merges included), and the segments left."""
    archive: list[SegmentInfo] = []
    written = 0
    for size in sizes:
        archive.append(SegmentInfo(name="", first_id="0-0", last_id="0-0", events=size))
        written += size
        if (run := plan(archive)) is not None:
            start, end = run
            merged = sum(s.events for s in archive[start:end])
            written += merged
            archive[start:end] = [
                SegmentInfo(name="", first_id="0-0", last_id="0-0", events=merged)
            ]
    return written, archive


@pytest.mark.parametrize("commit_events", [100, 500, 2_500, 10_000])
def test_an_event_is_rewritten_about_once_per_eightfold_growth_of_its_segment(
    commit_events: int,
) -> None:
    # A crawl committing every second: the slower it is, the smaller its segments.
    sizes = [commit_events] * (2_000_000 // commit_events)
    written, _ = commit_all(sizes)
    growths = math.log(SMALL_SEGMENT_EVENTS / commit_events, MIN_RUN)
    assert written / sum(sizes) <= 2 + math.ceil(growths)


def test_a_merged_segment_waits_for_enough_newer_ones_of_its_size() -> None:
    assert plan(segments([20_000] + [2_500] * (MIN_RUN - 1))) is None
    assert plan(segments([20_000] + [2_500] * MIN_RUN)) == (1, 1 + MIN_RUN)
    assert plan(segments([20_000] * MIN_RUN + [2_500] * 3)) == (0, MIN_RUN)


def test_a_smaller_straggler_joins_the_run_around_it() -> None:
    sizes = [2_500] * 5 + [300] + [2_500] * 3
    assert plan(segments(sizes)) == (0, len(sizes))


def test_short_runs_between_big_segments_are_merged_once_they_pile_up() -> None:
    # A projector catching up between bursts commits big segments among short runs.
    sizes = ([2_500] * (MIN_RUN - 1) + [SMALL_SEGMENT_EVENTS]) * 10
    small = [n for n in sizes if n < SMALL_SEGMENT_EVENTS]
    assert len(small) >= MAX_SMALL_SEGMENTS
    assert plan(segments(sizes)) == (0, MIN_RUN - 1)
    fewer = sizes[: len(sizes) - 2 * MIN_RUN]
    assert plan(segments(fewer)) is None


@given(st.lists(st.integers(1, 2 * SMALL_SEGMENT_EVENTS), max_size=400))
def test_small_segments_never_pile_up_past_the_bound(sizes: list[int]) -> None:
    _, archive = commit_all(sizes)
    small = sum(s.events < SMALL_SEGMENT_EVENTS for s in archive)
    # Past the bound only if no two are side by side: each between big segments.
    assert small < MAX_SMALL_SEGMENTS or small <= len(archive) - small + 1
