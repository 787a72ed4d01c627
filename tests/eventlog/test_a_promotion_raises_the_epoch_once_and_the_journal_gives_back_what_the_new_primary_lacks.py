"""A replica cut off from its primary misses writes the primary acknowledged; then it is
promoted (``REPLICAOF NO ONE``, as a Sentinel does). On the new primary a write of the old
epoch is refused until its writer follows the promotion: the job's epoch is raised once,
whoever notices first, and the writer's journal gives back what the new primary lacks:
each acknowledged write once, found where it arrived, sent again where it did not, and
recorded as orphaned where another worker took the task meanwhile. Real servers, really
out of sync."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
import redis
import redis.asyncio as aioredis

from eventlog import (
    WORKERS_GROUP,
    EventLog,
    JobIdentity,
    JobKeys,
    Journal,
    StoreLost,
    TaskOrphaned,
    TaskQueue,
    check_identity,
    connect,
    create_identity,
    follow_primary,
    primary_facts,
    read_identity,
    set_identity,
)
from tests.eventlog.conftest import PAIR_PASSWORD
from tests.eventlog.helpers import checkpoint, done, fetched, task
from tests.valkey_process import ValkeyProcess

pytestmark = pytest.mark.anyio
DEADLINE_S = 60
FOLLOWERS = 5


def client_of(server: ValkeyProcess) -> contextlib.AbstractAsyncContextManager[aioredis.Redis]:
    return connect(server.url)


async def in_sync(primary: aioredis.Redis, replica: aioredis.Redis, keys: JobKeys) -> None:
    with anyio.fail_after(DEADLINE_S):
        while await replica.xlen(keys.events) != await primary.xlen(keys.events):
            await anyio.sleep(0.01)


@contextlib.contextmanager
def cut_off(replica: ValkeyProcess) -> Iterator[None]:
    """The replica's link to its primary dropped and refused (a wrong ``masterauth``)."""
    with redis.Redis.from_url(replica.url) as admin:
        admin.config_set("masterauth", "not-the-password")
        admin.client_kill_filter(_type="master")
        yield
        admin.config_set("masterauth", PAIR_PASSWORD)


def promote(replica: ValkeyProcess) -> None:
    with redis.Redis.from_url(replica.url) as admin:
        admin.execute_command("REPLICAOF", "NO", "ONE")


async def test_the_promoted_replica_gets_back_every_acknowledged_write_once(
    primary_and_replica: tuple[ValkeyProcess, ValkeyProcess], job: str, tmp_path: Path
) -> None:
    old, new = primary_and_replica
    journal_dir = tmp_path / "journal"
    async with client_of(old) as a, client_of(new) as b:
        keys = JobKeys(job)
        identity = await create_identity(a, keys)
        assert (await follow_primary(a, keys)).bound  # bound to the primary, epoch kept
        w1 = TaskQueue(a, job, "w1", journal=Journal(journal_dir))
        w1.epoch = identity.epoch
        await w1.enqueue([task(n) for n in (1, 2, 3, 4)], actor="seed")
        leases = {lease.task.task_id: lease for lease in await w1.claim(4)}
        kept = checkpoint("task-1", 1)
        await w1.checkpoint(leases["task-1"], kept, before=[fetched("task-1", 1)])
        await in_sync(a, b, keys)
        with cut_off(new):
            page_2, ended, page_1 = checkpoint("task-1", 2), done("task-2"), checkpoint("task-3", 1)
            await w1.checkpoint(leases["task-1"], page_2, before=[fetched("task-1", 2)])
            await w1.finish(leases["task-2"], ended, before=[fetched("task-2", 1)])
            await w1.checkpoint(leases["task-3"], page_1, before=[fetched("task-3", 1)])
            orphan = checkpoint("task-4", 1)
            await w1.checkpoint(leases["task-4"], orphan)
            promote(new)
        w1.journal.close()  # type: ignore[union-attr]
        # Another worker takes task-4 on the new primary before w1 follows the promotion.
        lane = leases["task-4"].lane
        await b.xclaim(keys.tasks(lane), WORKERS_GROUP, "w2", 0, [leases["task-4"].entry_id])

        # Everyone who notices the promotion follows it: one of them raises the epoch.
        async with contextlib.AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(client_of(new)) for _ in range(FOLLOWERS)]
            with anyio.fail_after(DEADLINE_S):
                async with anyio.create_task_group() as following:
                    for client in clients:
                        following.start_soon(follow_primary, client, keys)
        raised = await read_identity(b, keys)
        assert raised is not None and raised.epoch == identity.epoch + 1
        assert (await primary_facts(b, keys)).failovers == {raised.epoch: ""}

        # w1, on the new primary with its old epoch, writes: refused, it follows (its
        # journal gives back first), and its write goes through in the new epoch.
        w1 = TaskQueue(b, job, "w1", journal=Journal(journal_dir))
        w1.epoch = identity.epoch
        after = checkpoint("task-3", 2)
        with anyio.fail_after(DEADLINE_S):
            await w1.checkpoint(leases["task-3"], after, before=[fetched("task-3", 2)])
        assert w1.epoch == raised.epoch
        assert (await read_identity(b, keys)) == raised  # not raised again

        events = [entry.event for entry in await EventLog(b, keys).read_range()]
        written = Counter(e.event_id for e in events)
        for event in [kept, page_2, ended, page_1, after]:
            assert written[event.event_id] == 1, event
        assert orphan.event_id not in written
        assert [(e.task_id, e.owner) for e in events if isinstance(e, TaskOrphaned)] == [
            ("task-4", "w2")
        ]
        pending = await w1.pending()
        assert sorted(lease.task.task_id for lease in pending) == ["task-1", "task-3"]
        [resume] = [lease for lease in pending if lease.task.task_id == "task-3"]
        point = await w1.resume_point(resume)
        assert point is not None and point[1].cursor.page == 2  # type: ignore[union-attr]
        w1.journal.close()  # type: ignore[union-attr]
        again = TaskQueue(b, job, "w1", journal=Journal(journal_dir))
        again.epoch = raised.epoch
        assert (await again.flush_journal()).total == 0  # given back once


async def test_a_holder_of_the_epoch_before_a_promotion_follows_it_but_not_a_restore(
    primary_and_replica: tuple[ValkeyProcess, ValkeyProcess], job: str
) -> None:
    _, new = primary_and_replica
    keys = JobKeys(job)
    async with client_of(new) as b:
        promote(new)
        identity = await create_identity(b, keys)
        await b.hset(keys.primary, "replid", "f" * 40)  # bound to a primary now gone
        with anyio.fail_after(DEADLINE_S):
            facts = await follow_primary(b, keys)
        assert facts.epoch == identity.epoch + 1
        assert await check_identity(b, keys, identity) == JobIdentity(
            job_id=identity.job_id, epoch=facts.epoch
        )
        # A restore raises it next: what a holder of either epoch holds is void.
        await set_identity(b, keys, JobIdentity(job_id=identity.job_id, epoch=facts.epoch + 1))
        for held in (identity.epoch, facts.epoch):
            with pytest.raises(StoreLost, match="restored meanwhile"):
                await check_identity(b, keys, JobIdentity(job_id=identity.job_id, epoch=held))
