"""A flow whose definition changed between a kill and its resume (a step added: its hash
differs from the checkpoint's) is refused: its task fails saying so, and nothing more is
done on the site — no order confirmed from a wrong place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from crawler.testsite import RunningSite
from crawler.testsite._orders import ORDERS_PATH
from eventlog import EventLog, JobKeys, TaskDone, TaskFailed
from tests.crawler.browser.flow_kills import kill_when_answering, start_flow

pytestmark = pytest.mark.anyio
SECOND_PAGE = f"{ORDERS_PATH}?status=open&page=2"


async def test_a_flow_resumed_with_other_steps_fails_its_task_and_does_nothing(
    chromium: str,
    site: RunningSite,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: Any,
    job: str,
) -> None:
    with anyio.fail_after(90):
        await start_flow(site, start_job)
        await kill_when_answering(
            site, worker_process, {}, SECOND_PAGE, lambda: site.answering(SECOND_PAGE)
        )
        confirmed = dict(site.orders.confirmations)
        assert confirmed
        changed = await worker_process("w1", "--exit-when-done", env={"FLOW_STEPS": "changed"})
        assert await changed.wait() == 0
    assert site.orders.confirmations == confirmed
    events = [e.event for e in await EventLog(redis_client, JobKeys(job)).read_range()]
    assert not [e for e in events if isinstance(e, TaskDone)]
    failed = [e for e in events if isinstance(e, TaskFailed)]
    assert len(failed) == 1 and "FlowChanged" in failed[0].reason, failed
    assert "changed since its checkpoint" in failed[0].reason
