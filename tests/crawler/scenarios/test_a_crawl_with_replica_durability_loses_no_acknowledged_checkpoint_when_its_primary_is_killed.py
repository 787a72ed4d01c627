"""Two workers crawl through the Sentinels with ``--durability replica``; mid-crawl the
replica lags and the primary is SIGKILLed: the replica is promoted, the workers follow it
and finish, every checkpoint a worker was told was written is in the new primary's log, and
no page was fetched again beyond what was in flight. With ``local`` durability the same
fault loses checkpoints the workers were told of, unless the workers journal their writes:
then the promotion raises the job's epoch once, and the journals give back what the new
primary lacks."""

from __future__ import annotations

import contextlib
import os
import signal
from collections import Counter
from collections.abc import Iterator, Sequence

import anyio
import msgspec
import pytest
import redis

from crawler._job import JobConfig, save_config
from crawler._politeness import Politeness
from crawler._worker import Worker, WorkerOptions, enqueue_seeds, worker_queue
from crawler.testsite import serve_testsite
from eventlog import (
    DEFAULT_RIDE_OUT_S,
    CheckpointSaved,
    Durability,
    Event,
    EventLog,
    JobKeys,
    Journal,
    Lease,
    PageFetched,
    ReplicaSetInfo,
    SettleMode,
    TaskQueue,
    connect,
    create_identity,
    journal_directory,
    primary_facts,
    read_identity,
    replica_set_password_path,
    replica_set_status,
    supervise_replica_set,
    watch_primary,
)
from tests.crawler.spiders import ListingSpider
from tests.eventlog.helpers import RecordingObserver
from tests.server_helpers import replica_set_story

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(270)]

WORKERS, CONCURRENCY = 2, 4
PAGES = 3000
"""Items of the test site: its listings run to a few hundred pages."""
KILL_AFTER_REQUESTS = 60
LAG_S = 1.0
"""The longest the replica is cut off before the primary is killed: a replica whose link
has been down for much longer than the Sentinels' down-after is not promoted."""
LAG_REQUESTS = 20
LISTING_SPIDER = "tests.crawler.spiders:ListingSpider"


class CheckpointWitness(RecordingObserver):
    """Writes down the event id of every checkpoint its worker was told went through."""

    def __init__(self) -> None:
        super().__init__()
        self.acknowledged: list[str] = []
        self.written: list[str] = []
        """Every event of a write its worker was told went through."""

    def settled(
        self, mode: SettleMode, lease: Lease, events: Sequence[Event], seconds: float
    ) -> None:
        super().settled(mode, lease, events, seconds)
        self.acknowledged += [e.event_id for e in events if isinstance(e, CheckpointSaved)]
        self.written += [e.event_id for e in events]


@contextlib.contextmanager
def cut_replication(port: int, password: str) -> Iterator[None]:
    """The replica on ``port`` cut off from its primary while the block runs: its link
    dropped, its reconnections refused (a wrong ``masterauth``). A SIGSTOPped replica would
    not do: the kernel buffers the primary's stream for it, and delivers it even after the
    primary is killed."""
    with redis.Redis(host="127.0.0.1", port=port, password=password) as replica:
        replica.config_set("masterauth", "not-the-password")
        replica.client_kill_filter(_type="master")
        try:
            yield
        finally:
            replica.config_set("masterauth", password)


class Outcome(msgspec.Struct, kw_only=True):
    """What a crawl through a failover left: the witnesses' and the new primary's word."""

    said: list[str]
    watched: list[str]
    acknowledged: list[str]
    """Event ids of the checkpoints the workers were told went through."""
    written: list[str]
    """Event ids of every write the workers were told went through."""
    logged: set[str]
    """Event ids in the new primary's log once the crawl ended."""
    repeated: list[str]
    """Event ids in that log more than once."""
    epoch: int
    """The job's epoch in the new primary once the crawl ended."""
    failovers: dict[int, str]
    served: Counter[str]
    """2xx responses of the site, by path."""
    listings: set[str]
    fetched_at_kill: int
    refetched_in_log: int
    story: str
    """What the set's members logged (`replica_set_story`): for a failing assertion."""


async def crawl_through_a_failover(
    replica_set: ReplicaSetInfo, durability: Durability, *, journals: bool = False
) -> Outcome:
    """Two workers crawl the site's listings with ``durability`` (and ``journals``, or
    not); mid-crawl the replica is cut off from the primary for a moment, then the primary
    is SIGKILLed: the replica is promoted without what it missed."""
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
            await create_identity(client, JobKeys(job))  # as `crawlog crawl` does
            await enqueue_seeds(TaskQueue(client, job, "test"), seeds, actor="test")
        listings = {
            sitemap.listing_path(c, p)
            for c in range(len(sitemap.categories))
            for p in range(1, sitemap.listing_pages(c) + 1)
        }

        async def work(n: int) -> None:
            async with connect(url, ride_out_s=DEFAULT_RIDE_OUT_S) as client:
                name = f"w{n}"
                journal = Journal(journal_directory(data_dir, name, job)) if journals else None
                queue = worker_queue(
                    client,
                    job,
                    name,
                    config,
                    observer=witnesses[n],
                    durability=durability,
                    journal=journal,
                )
                worker = Worker(
                    client,
                    job,
                    name,
                    config,
                    ListingSpider(),
                    data_dir=data_dir,
                    options=WorkerOptions(concurrency=CONCURRENCY, exit_when_done=True),
                    queue=queue,
                )
                await worker.run()

        members = replica_set_status(data_dir) or []
        (primary,) = [m for m in members if m.role == "primary"]
        (replica,) = [m for m in members if m.role == "replica"]
        assert primary.pid is not None and replica.pid is not None
        password = replica_set_password_path(data_dir).read_text().strip()
        with anyio.fail_after(120):
            async with anyio.create_task_group() as supervision:
                supervision.start_soon(supervise_replica_set, data_dir, said.append)
                supervision.start_soon(watch_primary, url, watched.append)
                async with anyio.create_task_group() as crawl:
                    for n in range(WORKERS):
                        crawl.start_soon(work, n)
                    while len(site.requests) < KILL_AFTER_REQUESTS:
                        await anyio.sleep(0.01)
                    with cut_replication(replica.port, password):
                        lagging_from = len(site.requests)
                        # The replica misses what is written meanwhile; cut off no longer
                        # than this, the Sentinels still promote it.
                        with anyio.move_on_after(LAG_S):
                            while len(site.requests) < lagging_from + LAG_REQUESTS:
                                await anyio.sleep(0.01)
                        os.kill(primary.pid, signal.SIGKILL)
                    fetched_at_kill = len(site.requests)
                supervision.cancel_scope.cancel()
        served = Counter(r.path for r in site.requests if 200 <= r.status < 300)
    async with connect(url) as client:
        entries = await EventLog(client, job).read_range()
        identity = await read_identity(client, JobKeys(job))
        facts = await primary_facts(client, JobKeys(job))
    assert identity is not None
    pages = Counter(e.event.url for e in entries if isinstance(e.event, PageFetched))
    logged = Counter(e.event.event_id for e in entries)
    return Outcome(
        said=said,
        watched=watched,
        acknowledged=[i for w in witnesses for i in w.acknowledged],
        written=[i for w in witnesses for i in w.written],
        logged=set(logged),
        repeated=[i for i, n in logged.items() if n > 1],
        epoch=identity.epoch,
        failovers=facts.failovers,
        served=served,
        listings=listings,
        fetched_at_kill=fetched_at_kill,
        refetched_in_log=sum(n - 1 for n in pages.values()),
        story=replica_set_story(data_dir),
    )


async def test_the_crawl_follows_the_promoted_replica_and_keeps_every_acknowledged_checkpoint(
    replica_set: ReplicaSetInfo,
) -> None:
    outcome = await crawl_through_a_failover(replica_set, "replica")
    # The kill really was mid-crawl.
    assert outcome.fetched_at_kill < len(outcome.listings), outcome.story
    assert outcome.listings <= set(outcome.served), outcome.story
    failovers = [line for line in outcome.said if line.startswith("failover: ")]
    assert failovers, (outcome.said, outcome.story)
    assert outcome.watched[:1] == failovers[:1]
    # The site's listings are paginated: tasks checkpoint.
    assert outcome.acknowledged, outcome.story
    assert [i for i in outcome.acknowledged if i not in outcome.logged] == [], outcome.story
    twice = [path for path, n in outcome.served.items() if n > 1]
    assert len(twice) <= WORKERS * CONCURRENCY, (twice, outcome.story)
    assert outcome.refetched_in_log <= WORKERS * CONCURRENCY, outcome.story


async def test_with_local_durability_and_no_journal_the_same_failover_loses_checkpoints(
    replica_set: ReplicaSetInfo,
) -> None:
    # What `replica` and the journals are for: the primary acknowledged them, the promoted
    # replica never had them (docs/operating.md, "Durability and failover").
    outcome = await crawl_through_a_failover(replica_set, "local")
    assert outcome.listings <= set(outcome.served), outcome.story
    assert [i for i in outcome.acknowledged if i not in outcome.logged] != [], outcome.story


async def test_with_local_durability_the_journals_give_back_what_the_new_primary_lacks(
    replica_set: ReplicaSetInfo,
) -> None:
    outcome = await crawl_through_a_failover(replica_set, "local", journals=True)
    assert outcome.fetched_at_kill < len(outcome.listings), outcome.story
    assert outcome.listings <= set(outcome.served), outcome.story
    assert outcome.written, outcome.story  # checkpoints, pages and items the workers were told of
    assert [i for i in outcome.written if i not in outcome.logged] == [], outcome.story
    assert outcome.repeated == [], outcome.story  # each given back once
    # One promotion, one raise, whichever worker noticed it first.
    assert outcome.epoch == 2, outcome.story
    assert list(outcome.failovers) == [2], outcome.story
    twice = [path for path, n in outcome.served.items() if n > 1]
    assert len(twice) <= WORKERS * CONCURRENCY, (twice, outcome.story)
    assert outcome.refetched_in_log <= WORKERS * CONCURRENCY, outcome.story
