"""Small segments are merged into bigger ones without changing what the archive holds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog import EventLog
from projector._archive import SegmentInfo, read_entries
from projector._compaction import (
    MAX_SMALL_BEHIND,
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
