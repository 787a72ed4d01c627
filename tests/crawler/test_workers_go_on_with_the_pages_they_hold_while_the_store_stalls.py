"""Two real workers (x 8) on a site of one-page tasks, their store SIGSTOPped for 10 s:
they go on with the tasks they hold (the site's request log is the witness), journal what
they write, flush it in order once the store answers, and the job ends with every page
fetched once, every task done once, and an archive `replay --verify` calls identical.
The kill variant: a worker SIGKILLed during the stall flushes its journal once restarted."""

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
TASKS = 200
STALL_S = 10.0
PAGES_DURING_THE_STALL = 12
DEADLINE_S = 55


async def crawl_through_a_stall(
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
        outage="stall", tasks=TASKS, window_s=STALL_S, kill_one=kill_one,
        deadline_s=DEADLINE_S,
    )  # fmt: skip


async def test_workers_fetch_pages_during_a_stall_and_lose_or_repeat_none(
    logged_site: RunningSite,
    worker_process: Callable[..., Any],
    job: str,
    data_dir: Path,
    tmp_path: Path,
    request_log: Path,
) -> None:
    crawl = await crawl_through_a_stall(
        logged_site, worker_process, job, data_dir, tmp_path, request_log, kill_one=False
    )
    assert crawl.during >= PAGES_DURING_THE_STALL
    assert_nothing_lost_or_repeated(crawl, TASKS, refetched=0)


async def test_a_worker_killed_during_the_stall_flushes_its_journal_once_restarted(
    logged_site: RunningSite,
    worker_process: Callable[..., Any],
    job: str,
    data_dir: Path,
    tmp_path: Path,
    request_log: Path,
) -> None:
    crawl = await crawl_through_a_stall(
        logged_site, worker_process, job, data_dir, tmp_path, request_log, kill_one=True
    )
    assert crawl.during >= PAGES_DURING_THE_STALL
    assert_nothing_lost_or_repeated(crawl, TASKS, refetched=0)
