"""Two real workers (x 8) on a site of one-page tasks whose store stops taking writes for a
window: SIGSTOPped (a stall: it answers nothing) or out of memory (its ``maxmemory``
lowered below what it holds, policy ``noeviction``: it answers a PING and reads, and
refuses every write with ``OOM``). Optionally one worker is SIGKILLed half-way through the
window and started again under its name once the window is over. The site's request log
is the witness of what was fetched, and when."""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import redis.asyncio as aioredis
import redis.exceptions

from crawler._job import JobConfig, save_config
from crawler._politeness import Politeness
from crawler.testsite import RunningSite, read_request_log
from eventlog import EventLog, ItemScraped, JobKeys, TaskDone, TaskQueue, connect
from tests.crawler.conftest import replay_verify, run_projector
from tests.crawler.left_behind import item_task
from tests.valkey_process import ValkeyProcess, running_valkey

Outage = Literal["stall", "oom"]
WORKER_ARGS = ("--exit-when-done", "--concurrency", "8", "--fsync", "never")
STARTED_REQUESTS = 20
"""Item pages served before the window opens: both workers under way, holding leases."""


@dataclass(frozen=True)
class OutageCrawl:
    in_window: list[float]
    """When the site served each item page while the store took no write: seconds since
    the window opened."""
    served: Counter[str]
    """Requests per item path, over the whole crawl."""
    events: list[Any]
    """The job's log once every worker is done."""

    @property
    def during(self) -> int:
        """Item pages served while the store took no write."""
        return len(self.in_window)

    def after(self, seconds: float) -> int:
        """Item pages served in the window, ``seconds`` or more after it opened."""
        return sum(1 for at in self.in_window if at >= seconds)


def item_requests(log: Path) -> list[tuple[float, str]]:
    return [(r.time, r.path) for r in read_request_log(log) if r.path.startswith("/item/")]


@asynccontextmanager
async def outage_window(server: ValkeyProcess, outage: Outage) -> AsyncIterator[None]:
    """The store takes no write inside (and says so: a write is refused or not answered)."""
    if outage == "stall":
        assert server.process is not None
        server.process.send_signal(signal.SIGSTOP)
        try:
            yield
        finally:
            server.process.send_signal(signal.SIGCONT)
        return
    async with aioredis.Redis.from_url(server.url) as admin:
        await admin.config_set("maxmemory", "1")  # far below what it holds: writes refused
        try:
            try:
                await admin.set("crawlog-test-probe", "x")
            except redis.exceptions.OutOfMemoryError:
                pass
            else:
                raise AssertionError("the server took a write at maxmemory 1")
            yield
        finally:
            await admin.config_set("maxmemory", "0")


async def crawl_through_an_outage(
    site: RunningSite,
    worker_process: Callable[..., Any],
    job: str,
    data_dir: Path,
    tmp_path: Path,
    request_log: Path,
    *,
    outage: Outage,
    tasks: int,
    window_s: float,
    kill_one: bool,
    deadline_s: float,
) -> OutageCrawl:
    """Crawl ``tasks`` item pages of ``site`` with two workers through a ``window_s``
    ``outage``; then project the log and check that ``replay --verify`` agrees."""
    with running_valkey(tmp_path / "valkey", "--save", "") as server:
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
                [item_task(site.url, n) for n in range(tasks)], actor="test"
            )
            env = {"REDIS_URL": server.url}
            with anyio.fail_after(deadline_s):
                workers = [await worker_process(f"w{n}", *WORKER_ARGS, env=env) for n in (1, 2)]
                while len(item_requests(request_log)) < STARTED_REQUESTS:
                    await anyio.sleep(0.05)
                async with outage_window(server, outage):
                    opened_at = time.time()
                    await anyio.sleep(window_s / 2)
                    if kill_one:
                        workers[0].kill()
                        await workers[0].wait()
                    await anyio.sleep(window_s / 2)
                    closed_at = time.time()
                if kill_one:
                    workers[0] = await worker_process("w1", *WORKER_ARGS, env=env)
                for worker in workers:
                    assert await worker.wait() == 0
            await run_projector(server.url, job, data_dir)
            await replay_verify(server.url, job, data_dir)
            events = [entry.event for entry in await EventLog(client, job).read_range()]
    # The log is written in batches: read once every worker is done.
    served = item_requests(request_log)
    in_window = [at - opened_at for at, _ in served if opened_at < at < closed_at]
    return OutageCrawl(in_window, Counter(path for _, path in served), events)


def assert_nothing_lost_or_repeated(crawl: OutageCrawl, tasks: int, *, refetched: int) -> None:
    """Every page fetched, at most ``refetched`` of them twice; every task done once, no
    item scraped twice, no event written twice."""
    assert set(crawl.served.values()) <= {1, 2}, crawl.served
    assert len(crawl.served) == tasks  # every page fetched
    assert sum(n - 1 for n in crawl.served.values()) <= refetched, crawl.served
    done = Counter(e.task_id for e in crawl.events if isinstance(e, TaskDone))
    assert sorted(done.values()) == [1] * tasks
    items = Counter(e.key for e in crawl.events if isinstance(e, ItemScraped))
    assert [key for key, n in items.items() if n > 1] == []
    repeated = [i for i, n in Counter(e.event_id for e in crawl.events).items() if n > 1]
    assert repeated == []
