"""Two workers crawl through the Sentinels with ``--durability replica``; the primary is
SIGKILLed mid-crawl: the replica is promoted, the workers follow it and finish, every
checkpoint a worker was told was written is in the new primary's log, and no page was
fetched again beyond what was in flight."""

from __future__ import annotations

import os
import signal
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from crawler._job import JobConfig, save_config
from crawler._politeness import Politeness
from crawler._worker import Worker, enqueue_seeds, worker_queue
from crawler.testsite import serve_testsite
from eventlog import (
    DEFAULT_RIDE_OUT_S,
    CheckpointSaved,
    Event,
    EventLog,
    JobKeys,
    Lease,
    PageFetched,
    ReplicaSetInfo,
    SettleMode,
    TaskQueue,
    connect,
    replica_set_status,
    supervise_replica_set,
    watch_primary,
)
from tests.crawler.spiders import ListingSpider
from tests.eventlog.helpers import RecordingObserver

pytestmark = pytest.mark.anyio

WORKERS, CONCURRENCY = 2, 4
PAGES = 3000
"""Items of the test site: its listings run to a few hundred pages."""
KILL_AFTER_REQUESTS = 60
LISTING_SPIDER = "tests.crawler.spiders:ListingSpider"


class CheckpointWitness(RecordingObserver):
    """Writes down the event id of every checkpoint its worker was told went through."""

    def __init__(self) -> None:
        super().__init__()
        self.acknowledged: list[str] = []

    def settled(
        self, mode: SettleMode, lease: Lease, events: Sequence[Event], seconds: float
    ) -> None:
        super().settled(mode, lease, events, seconds)
        self.acknowledged += [e.event_id for e in events if isinstance(e, CheckpointSaved)]


async def test_the_crawl_follows_the_promoted_replica_and_keeps_every_acknowledged_checkpoint(
    tmp_path: Path, replica_set: ReplicaSetInfo
) -> None:
    job, url, data_dir = "failover", replica_set.url, replica_set.data_dir
    said: list[str] = []
    watched: list[str] = []  # what a crawl on Sentinels of the user's would say
    witnesses = [CheckpointWitness() for _ in range(WORKERS)]
    async with serve_testsite(pages=PAGES, seed=7) as site:
        sitemap = site.sitemap
        # Every listing, a task each that walks its pages: a checkpoint a page.
        seeds = [site.url + sitemap.listing_path(c, 1) for c in range(len(sitemap.categories))]
        async with connect(url, ride_out_s=DEFAULT_RIDE_OUT_S) as client:
            config = JobConfig(
                seeds=tuple(seeds),
                spider=LISTING_SPIDER,
                max_depth=0,
                politeness=Politeness(per_host=WORKERS * CONCURRENCY),
            )
            await save_config(client, JobKeys(job), config)
            await enqueue_seeds(TaskQueue(client, job, "test"), seeds, actor="test")
        listings = {
            sitemap.listing_path(c, p)
            for c in range(len(sitemap.categories))
            for p in range(1, sitemap.listing_pages(c) + 1)
        }

        async def work(n: int) -> None:
            async with connect(url, ride_out_s=DEFAULT_RIDE_OUT_S) as client:
                name = f"w{n}"
                queue = worker_queue(
                    client, job, name, config, observer=witnesses[n], durability="replica"
                )
                worker = Worker(
                    client,
                    job,
                    name,
                    config,
                    ListingSpider(),
                    data_dir=data_dir,
                    concurrency=CONCURRENCY,
                    exit_when_done=True,
                    queue=queue,
                )
                await worker.run()

        (primary,) = [m for m in replica_set_status(data_dir) or [] if m.role == "primary"]
        assert primary.pid is not None
        with anyio.fail_after(55):
            async with anyio.create_task_group() as supervision:
                supervision.start_soon(supervise_replica_set, data_dir, said.append)
                supervision.start_soon(watch_primary, url, watched.append)
                async with anyio.create_task_group() as crawl:
                    for n in range(WORKERS):
                        crawl.start_soon(work, n)
                    while len(site.requests) < KILL_AFTER_REQUESTS:
                        await anyio.sleep(0.01)
                    os.kill(primary.pid, signal.SIGKILL)
                    fetched_at_kill = len(site.requests)
                supervision.cancel_scope.cancel()

        served = Counter(r.path for r in site.requests if 200 <= r.status < 300)
    assert fetched_at_kill < len(listings)  # the kill really was mid-crawl
    assert listings <= set(served)
    failovers = [line for line in said if line.startswith("failover: ")]
    assert failovers, said
    assert watched[:1] == failovers[:1]
    async with connect(url) as client:
        entries = await EventLog(client, job).read_range()
    logged = {e.event.event_id for e in entries}
    acknowledged = [i for w in witnesses for i in w.acknowledged]
    assert acknowledged  # the site's listings are paginated: tasks checkpoint
    assert [i for i in acknowledged if i not in logged] == []
    twice = [path for path, n in served.items() if n > 1]
    assert len(twice) <= WORKERS * CONCURRENCY, twice
    pages = Counter(e.event.url for e in entries if isinstance(e.event, PageFetched))
    assert sum(n - 1 for n in pages.values()) <= WORKERS * CONCURRENCY
