"""A projector starts its segment writer process up front only when the log is that far
ahead of its archive: one started on a stream that still holds the tail it committed (a
recrawl run right after its crawl, a crawl resumed at once) starts none, and one behind
the same number of entries does."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from eventlog import EventLog
from projector._projector import Projector
from tests.projector.test_projector import task_events

pytestmark = pytest.mark.anyio
TASKS, AHEAD = 300, 1_000


async def test_a_log_archived_already_starts_no_writer_and_one_ahead_does(
    log: EventLog, make_projector: Callable[..., Projector]
) -> None:
    events = [e for n in range(TASKS) for e in task_events(n)]
    assert len(events) >= AHEAD
    await log.append_many(events)
    async with make_projector(writer_min_events=AHEAD) as projector:
        assert projector._writer is not None and projector._writer.running  # behind: started
        await projector.catch_up()
    assert await log.length() == len(events)  # the committed tail is still in the stream
    async with make_projector(writer_min_events=AHEAD) as projector:
        assert projector._writer is not None and not projector._writer.running
        await projector.catch_up()
    await log.append_many([e for n in range(TASKS, 2 * TASKS) for e in task_events(n)])
    async with make_projector(writer_min_events=AHEAD) as projector:
        assert projector._writer is not None and projector._writer.running
        await projector.catch_up()
