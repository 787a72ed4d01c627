"""Two real workers (x 8) on a site of one-page tasks, their store SIGSTOPped for 10 s:
they go on with the tasks they hold (the site's request log is the witness), journal what
they write, flush it in order once the store answers, and the job ends with every page
fetched once, every task done once, and an archive `replay --verify` calls identical.
The kill variant: a worker SIGKILLed during the stall flushes its journal once restarted."""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler._job import JobConfig, save_config
from crawler._politeness import Politeness
from crawler.testsite import RunningSite, read_request_log, serve_testsite
from eventlog import EventLog, ItemScraped, JobKeys, TaskDone, TaskQueue, connect
from tests.crawler.conftest import replay_verify, run_projector
from tests.crawler.left_behind import item_task
from tests.valkey_process import running_valkey

pytestmark = pytest.mark.anyio
TASKS = 200
STALL_S = 10.0
PAGES_DURING_THE_STALL = 12
DEADLINE_S = 55


@pytest.fixture
def request_log(tmp_path: Path) -> Path:
    return tmp_path / "requests.jsonl"


@pytest.fixture
async def logged_site(request_log: Path) -> AsyncIterator[RunningSite]:
    async with serve_testsite(pages=TASKS + 10, seed=1, request_log=request_log) as running:
        yield running


def item_requests(log: Path) -> list[tuple[float, str]]:
    return [(r.time, r.path) for r in read_request_log(log) if r.path.startswith("/item/")]


async def crawl_through_a_stall(
    site: RunningSite,
    worker_process: Callable[..., Any],
    job: str,
    data_dir: Path,
    tmp_path: Path,
    request_log: Path,
    *,
    kill_one: bool,
) -> tuple[int, Counter[str], list[Any]]:
    """Pages served during the stall, requests per item path, and the job's events."""
    with running_valkey(tmp_path / "valkey") as server:
        assert server.process is not None
        async with connect(server.url) as client:
            config = JobConfig(
                seeds=(site.url + "/",),
                obey_robots=False,
                max_depth=0,
                # A worker holds the tasks of a site whose host has fewer than ``per_host``
                # of its requests waiting (`crawler._fair_claims`): what it goes on with.
                politeness=Politeness(per_host=8, delay_s=0.1),
            )
            await save_config(client, JobKeys(job), config)
            await TaskQueue(client, job, "seed").enqueue(
                [item_task(site.url, n) for n in range(TASKS)], actor="test"
            )
            env = {"REDIS_URL": server.url}
            args = ("--exit-when-done", "--concurrency", "8", "--fsync", "never")
            with anyio.fail_after(DEADLINE_S):
                workers = [await worker_process(f"w{n}", *args, env=env) for n in (1, 2)]
                while len(item_requests(request_log)) < 20:  # both under way
                    await anyio.sleep(0.05)
                stopped_at = time.time()
                server.process.send_signal(signal.SIGSTOP)
                try:
                    await anyio.sleep(STALL_S / 2)
                    if kill_one:
                        workers[0].kill()
                        await workers[0].wait()
                    await anyio.sleep(STALL_S / 2)
                finally:
                    resumed_at = time.time()
                    server.process.send_signal(signal.SIGCONT)
                if kill_one:
                    workers[0] = await worker_process("w1", *args, env=env)
                for worker in workers:
                    assert await worker.wait() == 0
            await run_projector(server.url, job, data_dir)
            await replay_verify(server.url, job, data_dir)
            events = [entry.event for entry in await EventLog(client, job).read_range()]
    # The log is written in batches: read once every worker is done.
    served = item_requests(request_log)
    during = sum(1 for at, _ in served if stopped_at < at < resumed_at)
    return during, Counter(path for _, path in served), events


def assert_nothing_lost_or_repeated(served: Counter[str], events: list[Any]) -> None:
    assert sorted(served.values()) == [1] * TASKS  # every page fetched, once
    done = Counter(e.task_id for e in events if isinstance(e, TaskDone))
    assert sorted(done.values()) == [1] * TASKS
    items = Counter(e.key for e in events if isinstance(e, ItemScraped))
    assert [key for key, n in items.items() if n > 1] == []
    repeated = [i for i, n in Counter(e.event_id for e in events).items() if n > 1]
    assert repeated == []


async def test_workers_fetch_pages_during_a_stall_and_lose_or_repeat_none(
    logged_site: RunningSite,
    worker_process: Callable[..., Any],
    job: str,
    data_dir: Path,
    tmp_path: Path,
    request_log: Path,
) -> None:
    during, served, events = await crawl_through_a_stall(
        logged_site, worker_process, job, data_dir, tmp_path, request_log, kill_one=False
    )
    assert during >= PAGES_DURING_THE_STALL
    assert_nothing_lost_or_repeated(served, events)


async def test_a_worker_killed_during_the_stall_flushes_its_journal_once_restarted(
    logged_site: RunningSite,
    worker_process: Callable[..., Any],
    job: str,
    data_dir: Path,
    tmp_path: Path,
    request_log: Path,
) -> None:
    during, served, events = await crawl_through_a_stall(
        logged_site, worker_process, job, data_dir, tmp_path, request_log, kill_one=True
    )
    assert during >= PAGES_DURING_THE_STALL
    assert_nothing_lost_or_repeated(served, events)
