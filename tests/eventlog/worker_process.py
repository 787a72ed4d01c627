"""A minimal worker loop over the eventlog API alone, run as a subprocess that tests kill
at chosen moments.

    python -m tests.eventlog.worker_process URL JOB NAME PAGES [--stop-at STEP:N] [--recover-now]

Each task is a synthetic listing of PAGES pages (no network). Per page the worker appends
the page's ``PageFetched`` together with a checkpoint (the last page: with ``TaskDone``) in
one fenced call, and resumes a task after its last checkpoint. It prints one line per step
(claimed, fetching, checkpointed, finished); with ``--stop-at STEP:N`` it prints ``PAUSED``
when it reaches STEP for the Nth time and waits there to be killed. With no task left in
the lanes it recovers expired leases as the real worker does (``expired`` + ``recover``:
each moved to the recovery lane with its ``TaskReclaimed`` event in one step), then claims
them from there; ``--recover-now`` recovers other workers' leases without waiting for them
to expire.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable

import anyio
import msgspec

from eventlog import (
    CheckpointSaved,
    Counts,
    Cursor,
    Lease,
    PageFetched,
    Task,
    TaskClaimed,
    TaskDone,
    TaskQueue,
    TaskReclaimed,
    connect,
)

LEASE_MS = 1_500
IDLE_BLOCK_MS = 200

OnStep = Callable[[str, str], Awaitable[None]]


async def _quiet(step: str, detail: str) -> None:
    pass


async def run_task(
    queue: TaskQueue, lease: Lease, pages: int, page_time_s: float, on_step: OnStep
) -> None:
    """Fetch the task's pages after its last checkpoint; checkpoint each, finish the last."""
    task_id, name, attempt = lease.task.task_id, queue.consumer, lease.task.attempt
    first_page = 1
    pointers = await queue.checkpoint_ids([task_id])
    if pointers:
        saved = (await queue.log.read_ids([pointers[task_id]]))[pointers[task_id]]
        assert isinstance(saved, CheckpointSaved)
        first_page = saved.cursor.page + 1
    for page in range(first_page, pages + 1):
        await on_step("fetching", f"{task_id} {page}")
        await anyio.sleep(page_time_s)
        fetched = PageFetched(
            actor=name,
            task_id=task_id,
            attempt=attempt,
            url=f"{lease.task.url}?page={page}",
            status=200,
            page=page,
        )
        if page < pages:
            saved = CheckpointSaved(
                actor=name,
                task_id=task_id,
                attempt=attempt,
                cursor=Cursor(page=page),
                counts=Counts(pages=page),
            )
            await queue.checkpoint(lease, saved, before=[fetched])
            await on_step("checkpointed", f"{task_id} {page}")
        else:
            done = TaskDone(actor=name, task_id=task_id, attempt=attempt, counts=Counts(pages=page))
            await queue.finish(lease, done, before=[fetched])
            await on_step("finished", task_id)


async def run_worker(
    url: str,
    job: str,
    name: str,
    *,
    pages: int,
    page_time_s: float = 0.0,
    lease_ms: int = LEASE_MS,
    recover_idle_ms: int | None = None,
    on_step: OnStep = _quiet,
) -> None:
    """Work on the job's tasks until none is left: own leases first, then new ones; with
    none left in the lanes, expired leases are moved to the recovery lane and claimed."""
    async with connect(url) as client:
        queue = TaskQueue(client, job, name, lease_ms=lease_ms)
        leases, _ = await queue.take_back(1000)  # a restart resumes its own leases first
        while True:
            for lease in leases:
                await on_step("claimed", lease.task.task_id)
                await run_task(queue, lease, pages, page_time_s, on_step)
            leases = await queue.claim(1, block_ms=IDLE_BLOCK_MS)
            if leases:
                await queue.log.append_many([claimed_event(name, lease) for lease in leases])
                continue
            expired, _ = await queue.expired(min_idle_ms=recover_idle_ms)
            if expired:
                moves = [recovery(name, lease) for lease in expired]
                await queue.recover(moves, min_idle_ms=recover_idle_ms)
                # Those moved are in the recovery lane now: the next claim takes them.
            elif await queue.remaining() == 0:
                return


def claimed_event(worker: str, lease: Lease) -> TaskClaimed:
    return TaskClaimed(
        actor=worker,
        task_id=lease.task.task_id,
        attempt=lease.task.attempt,
        deliveries=lease.deliveries,
    )


def recovery(worker: str, lease: Lease) -> tuple[Lease, TaskReclaimed, Task]:
    """What ``recover`` moves for an expired lease: its task, to the recovery lane with its
    recoveries and owners (no recovery limit here: these tests never reach one)."""
    owner = lease.previous_owner or "?"
    moved = msgspec.structs.replace(
        lease.task, recoveries=lease.recoveries, owners=(*lease.task.owners, owner)
    )
    event = TaskReclaimed(
        actor=worker,
        task_id=lease.task.task_id,
        attempt=lease.task.attempt,
        previous_owner=owner,
        deliveries=lease.deliveries,
    )
    return lease, event, moved


class Stepper:
    def __init__(self, stop_at: str | None) -> None:
        step, _, count = (stop_at or ":").partition(":")
        self.stop_step, self.stop_count = step, int(count or 0)
        self.seen = 0

    async def step(self, name: str, detail: str) -> None:
        print(name, detail, flush=True)
        if name == self.stop_step:
            self.seen += 1
            if self.seen == self.stop_count:
                print("PAUSED", flush=True)
                await anyio.sleep_forever()


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("job")
    parser.add_argument("name")
    parser.add_argument("pages", type=int)
    parser.add_argument("--stop-at")
    parser.add_argument("--recover-now", action="store_true")
    args = parser.parse_args(argv)
    await run_worker(
        args.url, args.job, args.name, pages=args.pages,
        recover_idle_ms=0 if args.recover_now else None, on_step=Stepper(args.stop_at).step,
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv[1:]))
