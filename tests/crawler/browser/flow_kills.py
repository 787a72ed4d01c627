"""Kills of a flow's worker at a chosen point of the order console, for the flow tests."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any

import anyio

from crawler.cli._argv import crawlog_command
from crawler.testsite import RunningSite
from crawler.testsite._orders import ORDERS_PATH, OrderConsole
from eventlog import ItemScraped
from tests.crawler.conftest import ROOT

LONG_LEASE_MS = 120_000
"""Longer than a test: the restart resumes its own task rather than wait for expiry."""
SPIDER = "tests.crawler.flow_spiders:ShipOrders"
ORDERS = 20
"""Two pages of open orders: enough to stop mid-way, few enough for a short test."""
LATE_S = 60.0
"""How late the console answers where a test kills: never, as the test sees it."""


async def start_flow(site: RunningSite, start_job: Callable[..., Any]) -> None:
    """A job of one task, the flow over the console's orders (`ORDERS` of them)."""
    site.orders = OrderConsole(ORDERS)
    await start_job([site.url + ORDERS_PATH], spider=SPIDER, browser=True, lease_ms=LONG_LEASE_MS)


async def kill_when_answering(
    site: RunningSite,
    worker_process: Callable[..., Any],
    env: dict[str, str],
    late: str,
    arrived: Callable[[], bool],
) -> None:
    """Start a worker, and SIGKILL it once ``arrived()`` says the request the console
    answers late (``late``: a path, or an order id for its confirmation) has come."""
    site.orders.delays[late] = LATE_S
    first = await worker_process("w1", env=env)
    while not arrived():
        await anyio.sleep(0.02)
    first.send_signal(signal.SIGKILL)
    await first.wait()
    del site.orders.delays[late]


async def run_crawlog(valkey_url: str, *args: str) -> str:
    """``crawlog ARGS`` against the test's server: its output (the test fails unless 0)."""
    env = {**os.environ, "REDIS_URL": valkey_url}
    done = await anyio.run_process(crawlog_command(*args), env=env, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def item_keys(events: list[Any]) -> list[str]:
    """The keys of the items written, in order, each as often as it was written."""
    return [e.key for e in events if isinstance(e, ItemScraped)]
