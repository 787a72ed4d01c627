"""The projector folds the log, archives it and commits, in order, exactly once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from eventlog import EventLog, PageFetched, TaskClaimed, TaskDone, TaskEnqueued
from projector._archive import read_entries
from projector._committed import committed_position, read_committed
from projector._fold import fold
from projector._projector import Projector
from projector._state import canonical
from projector._store import Store

pytestmark = pytest.mark.anyio
SITE = "http://site.test"


def task_events(n: int) -> list[TaskEnqueued | TaskClaimed | PageFetched | TaskDone]:
    t = f"t{n}"
    return [
        TaskEnqueued(actor="seed", task_id=t, url=f"{SITE}/{t}", site=SITE),
        TaskClaimed(actor="w1", task_id=t, attempt=1),
        PageFetched(actor="w1", task_id=t, attempt=1, url=f"{SITE}/{t}", status=200, bytes=10),
        TaskDone(actor="w1", task_id=t, attempt=1),
    ]


async def test_the_projector_folds_archives_and_publishes_its_position(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> None:
    events = [e for n in range(50) for e in task_events(n)]
    await log.append_many(events)
    async with make_projector() as projector:
        await projector.catch_up()
    assert projector.state.job.tasks["done"] == 50
    assert projector.state.job.pages == 50
    manifest = Store(data_dir, job).read_manifest()
    assert manifest.events == 200
    assert manifest.position == await log.last_id() == projector.state.position
    assert await committed_position(log.redis, job) == manifest.position
    archived = [e for p in Store(data_dir, job).segment_paths(manifest) for e in read_entries(p)]
    assert [e.event for e in archived] == events
    assert canonical(fold(archived)) == canonical(read_committed(Store(data_dir, job))[1])


async def test_a_restarted_projector_continues_where_it_committed(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> None:
    first, second = [e for n in range(10) for e in task_events(n)], task_events(99)
    await log.append_many(first)
    async with make_projector() as projector:
        await projector.catch_up()
    await log.append_many(second)
    async with make_projector() as projector:
        await projector.catch_up()
    _, state = read_committed(Store(data_dir, job))
    assert state.job.events == len(first) + len(second)
    entries = await log.read_range()
    assert canonical(state) == canonical(fold(entries))


async def test_the_stream_is_trimmed_only_below_the_committed_position(
    log: EventLog, make_projector: Callable[..., Projector]
) -> None:
    await log.append_many([e for n in range(100) for e in task_events(n)])
    async with make_projector(keep_tail_s=0, commit_events=100) as projector:
        await projector.catch_up()
    assert await log.length() < 400
    remaining = await log.read_range()
    assert remaining[-1].stream_id == projector.manifest.position
