"""Two real workers (x 8) on a site of one-page tasks, their store out of memory for a
window (its ``maxmemory`` lowered below what it holds, policy ``noeviction``: it answers a
PING and reads, and refuses every write with ``OOM``): they go on with the tasks they
hold, as through a stall (the site's request log is the witness), journal what they
write, flush it in order once the store takes writes again, and the job ends with every
page fetched, every task done once, no item scraped twice, and an archive `replay
--verify` calls identical. The kill variant: a worker SIGKILLed during the window flushes
its journal once restarted, and refetches at most the request it had on its way (offline,
a worker sends one request at a time to a host, `crawler._offline.OfflineRide.slot`: the
site is one host)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from crawler.testsite import RunningSite
from tests.crawler.store_outage import (
    OutageCrawl,
    assert_nothing_lost_or_repeated,
    crawl_through_an_outage,
)

pytestmark = pytest.mark.anyio
TASKS = 160
WINDOW_S = 6.0
DEADLINE_S = 45
PAGES_IN_THE_WINDOW = 12
PAGES_IN_ITS_SECOND_HALF = 5
"""Pages served in the window's second half: a worker that waits the refusals out instead
(each write retried) stops fetching part-way through, once every task it holds waits for
a refused write, and the second half saw none."""
IN_FLIGHT_OFFLINE = 1
"""Requests a worker has on their way to the one host while its store takes no write."""


async def crawl_through_a_full_store(
    site: RunningSite,
    worker_process: Callable[..., Any],
    job: str,
    data_dir: Path,
    tmp_path: Path,
    request_log: Path,
    *,
    kill_one: bool,
) -> OutageCrawl:
    return await crawl_through_an_outage(
        site, worker_process, job, data_dir, tmp_path, request_log,
        outage="oom", tasks=TASKS, window_s=WINDOW_S, kill_one=kill_one,
        deadline_s=DEADLINE_S,
    )  # fmt: skip


async def test_workers_fetch_pages_while_the_store_is_out_of_memory_and_lose_none(
    logged_site: RunningSite,
    worker_process: Callable[..., Any],
    job: str,
    data_dir: Path,
    tmp_path: Path,
    request_log: Path,
) -> None:
    crawl = await crawl_through_a_full_store(
        logged_site, worker_process, job, data_dir, tmp_path, request_log, kill_one=False
    )
    assert crawl.during >= PAGES_IN_THE_WINDOW, crawl.in_window
    assert crawl.after(WINDOW_S / 2) >= PAGES_IN_ITS_SECOND_HALF, crawl.in_window
    assert_nothing_lost_or_repeated(crawl, TASKS, refetched=0)


async def test_a_worker_killed_while_the_store_is_out_of_memory_flushes_its_journal_once_restarted(
    logged_site: RunningSite,
    worker_process: Callable[..., Any],
    job: str,
    data_dir: Path,
    tmp_path: Path,
    request_log: Path,
) -> None:
    crawl = await crawl_through_a_full_store(
        logged_site, worker_process, job, data_dir, tmp_path, request_log, kill_one=True
    )
    assert crawl.during >= PAGES_IN_THE_WINDOW, crawl.in_window
    assert crawl.after(WINDOW_S / 2) >= PAGES_IN_ITS_SECOND_HALF, crawl.in_window
    assert_nothing_lost_or_repeated(crawl, TASKS, refetched=IN_FLIGHT_OFFLINE)
