"""History of a job whose segments have no index (written before indexes), a truncated
one, or one that belongs to another segment: those segments are scanned whole, and every
event of the task is shown, as with good indexes."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from eventlog import EventLog
from projector._history import task_history
from projector._projector import Projector
from projector._segment_index import index_name, matching_row_groups
from projector._store import Store
from tests.projector.history_helpers import crawl, expected_history, url_of

pytestmark = pytest.mark.anyio
TASKS = 600
SHOWN = (0, 6, TASKS // 2, TASKS - 1)


async def shows_every_event(redis_client: aioredis.Redis, store: Store, log: EventLog) -> None:
    logged = await log.read_range()
    for n in SHOWN:
        found = await task_history(redis_client, store, [f"t{n}"], page_url=url_of(n))
        assert [e.stream_id for e in found] == expected_history(logged, f"t{n}", url_of(n))


async def test_history_of_segments_without_an_index_or_with_a_stale_one_shows_every_event(
    redis_client: aioredis.Redis,
    log: EventLog,
    make_projector: Callable[..., Projector],
    job: str,
    data_dir: Path,
) -> None:
    events = crawl(TASKS)
    for start in range(0, len(events), 500):
        await log.append_many(events[start : start + 500])
        async with make_projector(commit_events=500) as projector:
            await projector.catch_up()
    store = Store(data_dir, job)
    segments = store.read_manifest().segments
    assert len(segments) >= 3
    paths = [store.archive / s.name for s in segments]
    indexes = [p.with_name(index_name(p.name)) for p in paths]
    assert all(
        matching_row_groups(p, s.events, ["t0"], None) is not None
        for p, s in zip(paths, segments, strict=True)
    )
    await shows_every_event(redis_client, store, log)

    # Another segment's index, one cut short, none.
    shutil.copy(indexes[1], indexes[0])
    with open(indexes[1], "r+b") as index:
        index.truncate(os.path.getsize(indexes[1]) - 8)
    indexes[2].unlink()
    for path, segment in zip(paths[:3], segments[:3], strict=True):
        assert matching_row_groups(path, segment.events, ["t0"], None) is None
    await shows_every_event(redis_client, store, log)

    # A job written before indexes: none at all.
    for index in indexes[3:]:
        index.unlink()
    await shows_every_event(redis_client, store, log)
