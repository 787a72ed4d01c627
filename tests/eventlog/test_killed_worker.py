"""A worker killed with SIGKILL at any point of its loop leaves no half-done step.

The worker is a real subprocess (``worker_process``) stopped at each step boundary, or at
an arbitrary moment while running flat out, then killed with SIGKILL. Whatever the moment:
a step's events are all in the log or none is; the checkpoint index points at each
unfinished task's last checkpoint; a task is finished (terminal event, acked) or still
queued, never both. A second worker then finishes the job without redoing a checkpointed
page.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import anyio
import msgspec
import pytest
import redis.asyncio as aioredis

from eventlog import (
    CheckpointSaved,
    EventLog,
    LogEntry,
    PageFetched,
    TaskDone,
    TaskEnqueued,
    TaskQueue,
    TaskReclaimed,
)
from tests.eventlog.helpers import task

pytestmark = pytest.mark.anyio
TASKS = 6
PAGES = 3
ROOT = Path(__file__).resolve().parents[2]


def start_worker(url: str, job: str, name: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.eventlog.worker_process", url, job, name, str(PAGES), *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


def run_until(process: subprocess.Popen[str], line_wanted: Callable[[int, str], bool]) -> None:
    """Read the worker's output until a line is wanted, then SIGKILL it."""
    assert process.stdout is not None
    for n, line in enumerate(process.stdout):
        if line_wanted(n, line.strip()):
            break
    else:
        pytest.fail(f"worker exited ({process.wait()}) before the kill point")
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    process.stdout.close()


async def lane_task_ids(redis_client: aioredis.Redis, queue: TaskQueue) -> list[str]:
    ids = []
    for lane in queue.keys.lanes:
        for _entry_id, fields in await redis_client.execute_command("XRANGE", lane, "-", "+"):
            ids.append(msgspec.msgpack.decode(fields[1])["task_id"])
    return ids


async def leased_task_ids(queue: TaskQueue, consumer: str) -> set[str]:
    """Tasks whose lease ``consumer`` holds."""
    held = set()
    for lane, entry_id in await queue.leases_of(consumer):
        key = queue.keys.tasks(lane)
        [(_, fields)] = await queue.redis.execute_command("XRANGE", key, entry_id, entry_id)
        held.add(msgspec.msgpack.decode(fields[1])["task_id"])
    return held


async def check_consistent(log: EventLog, queue: TaskQueue, redis_client: aioredis.Redis) -> None:
    """Assert the invariants that must hold after any crash."""
    entries: list[LogEntry] = await log.read_range()
    enqueued = {e.event.task_id for e in entries if isinstance(e.event, TaskEnqueued)}
    finished = Counter(e.event.task_id for e in entries if isinstance(e.event, TaskDone))
    assert all(count == 1 for count in finished.values()), f"finished twice: {finished}"

    # Each step's events are contiguous and complete: a checkpoint or a terminal event
    # always follows the PageFetched of the same page, written by the same script call.
    for before, marker in itertools.pairwise(entries):
        if isinstance(marker.event, CheckpointSaved | TaskDone):
            assert isinstance(before.event, PageFetched)
            assert before.event.task_id == marker.event.task_id
            assert before.event.page == marker.event.counts.pages
    for fetched, after in itertools.pairwise([*entries, None]):
        if isinstance(fetched.event, PageFetched):  # type: ignore[union-attr]
            assert after is not None, "half a step: a fetch without its checkpoint"
            assert isinstance(after.event, CheckpointSaved | TaskDone), "half a step"

    # A task is finished or still queued, never both, never neither.
    queued = await lane_task_ids(redis_client, queue)
    assert len(queued) == len(set(queued))
    assert set(queued) | set(finished) == enqueued
    assert not set(queued) & set(finished)

    # The index points at each unfinished task's last checkpoint; finished tasks have none.
    last_checkpoint: dict[str, str] = {}
    pages_checkpointed: dict[str, list[int]] = defaultdict(list)
    for entry in entries:
        if isinstance(entry.event, CheckpointSaved):
            last_checkpoint[entry.event.task_id] = entry.stream_id
            pages_checkpointed[entry.event.task_id].append(entry.event.cursor.page)
    pointers = await queue.checkpoint_ids(sorted(enqueued))
    assert pointers == {t: i for t, i in last_checkpoint.items() if t not in finished}

    # No checkpointed page is ever done again.
    for pages in pages_checkpointed.values():
        assert pages == sorted(set(pages))


async def enqueue_job(make_queue: Callable[..., TaskQueue]) -> TaskQueue:
    queue = make_queue("seeder")
    await queue.enqueue([task(n) for n in range(TASKS)], actor="seed")
    return queue


async def finish_with(valkey_url: str, job: str, name: str, *extra: str) -> None:
    command = [sys.executable, "-m", "tests.eventlog.worker_process"]
    with anyio.fail_after(60):
        await anyio.run_process(
            [*command, valkey_url, job, name, str(PAGES), *extra], cwd=ROOT, check=True
        )


@pytest.mark.parametrize(
    "stop_at", ["claimed:1", "fetching:2", "checkpointed:1", "checkpointed:2", "finished:1"]
)
async def test_worker_killed_at_a_step_boundary_leaves_a_consistent_log(
    stop_at: str,
    valkey_url: str,
    job: str,
    log: EventLog,
    make_queue: Callable[..., TaskQueue],
    redis_client: aioredis.Redis,
) -> None:
    queue = await enqueue_job(make_queue)
    worker = start_worker(valkey_url, job, "w1", "--stop-at", stop_at)
    run_until(worker, lambda _n, line: line == "PAUSED")
    await check_consistent(log, queue, redis_client)
    held = await leased_task_ids(queue, "w1")
    assert held or stop_at.startswith("finished"), "killed holding the task it was on"

    # Another worker recovers the dead one's lease (to the recovery lane, without waiting
    # for it to expire), claims it from there and finishes everything.
    await finish_with(valkey_url, job, "w2", "--recover-now")
    await check_consistent(log, queue, redis_client)
    assert await lane_task_ids(redis_client, queue) == []
    recovered = [e.event for e in await log.read_range() if isinstance(e.event, TaskReclaimed)]
    assert {(e.task_id, e.previous_owner) for e in recovered} == {(t, "w1") for t in held}
    assert len(recovered) == len(held), "each lease of the dead worker recovered once"


@pytest.mark.parametrize("after_lines", [5, 13, 22])
async def test_worker_killed_while_running_resumes_under_its_own_name(
    after_lines: int,
    valkey_url: str,
    job: str,
    log: EventLog,
    make_queue: Callable[..., TaskQueue],
    redis_client: aioredis.Redis,
) -> None:
    queue = await enqueue_job(make_queue)
    # No pause: the worker keeps going while the kill is on its way, so it lands wherever
    # the worker happens to be, often in the middle of a script call.
    worker = start_worker(valkey_url, job, "w1")
    run_until(worker, lambda n, _line: n == after_lines)
    await check_consistent(log, queue, redis_client)

    await finish_with(valkey_url, job, "w1")  # a restart resumes its own pending list
    await check_consistent(log, queue, redis_client)
    assert await lane_task_ids(redis_client, queue) == []
