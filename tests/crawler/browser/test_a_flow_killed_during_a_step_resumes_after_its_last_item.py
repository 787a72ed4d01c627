"""A flow's worker SIGKILLed during a step (the console's next page of orders asked for,
not answered yet): the restarted worker fetches the task's page again, runs the flow's
recovery path (the console, its filter set through the page, page N) and goes on after
the last order its checkpoint names — every open order confirmed once, each one's item
written once, none repeated, none lost."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from crawler.testsite import RunningSite
from crawler.testsite._orders import ORDERS_PATH
from eventlog import EventLog, JobKeys
from tests.crawler.browser.flow_kills import item_keys, kill_when_answering, start_flow

pytestmark = pytest.mark.anyio
SECOND_PAGE = f"{ORDERS_PATH}?status=open&page=2"


async def test_a_flow_killed_between_two_pages_goes_on_after_its_last_item(
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
        first_page = site.orders.ids("open")[:10]
        assert set(site.orders.confirmations) == set(first_page)  # killed after them
        again = await worker_process("w1", "--exit-when-done")
        assert await again.wait() == 0
    open_orders = site.orders.ids("open")
    assert site.orders.confirmations == dict.fromkeys(open_orders, 1)
    events = [e.event for e in await EventLog(redis_client, JobKeys(job)).read_range()]
    keys = item_keys(events)
    assert sorted(keys) == open_orders and len(set(keys)) == len(keys)
