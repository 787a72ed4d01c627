"""A projector behind the log (restarted after a while, or outpaced by a fast crawl)
commits segments big enough that compaction leaves them alone: each event it catches up
on is written once, not once in a small segment and again in the merge of it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from eventlog import EventLog
from projector._compaction import SMALL_SEGMENT_EVENTS, plan
from projector._projector import Projector
from projector._store import Store
from tests.projector.test_projector import task_events

pytestmark = pytest.mark.anyio
TASKS = 55_000
"""Four events a task: a little over two segments' worth of events."""


async def test_a_projector_catching_up_writes_each_event_once(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> None:
    events = [e for n in range(TASKS) for e in task_events(n)]
    for start in range(0, len(events), 10_000):
        await log.append_many(events[start : start + 10_000])
    # The default commit size, and an interval that would cut every segment short.
    async with make_projector(commit_interval_s=0.01) as projector:
        await projector.catch_up()
    manifest = Store(data_dir, job).read_manifest()
    sizes = [s.events for s in manifest.segments]
    assert sum(sizes) == len(events)
    assert all(size >= SMALL_SEGMENT_EVENTS for size in sizes[:-1]), sizes
    assert plan(manifest.segments) is None
    assert projector.state.job.tasks["done"] == TASKS
