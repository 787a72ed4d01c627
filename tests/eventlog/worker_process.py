"""A minimal worker loop over the eventlog API, run as a subprocess and killed by tests.

    python -m tests.eventlog.worker_process URL JOB NAME PAGES [--stop-at STEP:N] [--reclaim]

Each task has PAGES pages. Per page the worker appends the page's ``PageFetched`` together
with a checkpoint (or, for the last page, with ``TaskDone``) in one fenced script call, and
resumes a task after the page its last checkpoint names. It prints one line per step, and
with ``--stop-at STEP:N`` it prints ``PAUSED`` when it reaches STEP for the Nth time and
waits there to be killed.
"""

from __future__ import annotations

import argparse
import sys

import anyio

from eventlog import (
    CheckpointSaved,
    Counts,
    Cursor,
    Lease,
    PageFetched,
    TaskDone,
    TaskQueue,
    connect,
)

STEPS = ("claimed", "fetching", "checkpointed", "finished")


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


async def run_task(queue: TaskQueue, lease: Lease, pages: int, stepper: Stepper) -> None:
    task_id, name = lease.task.task_id, queue.consumer
    first_page = 1
    pointers = await queue.checkpoint_ids([task_id])
    if pointers:
        found = await queue.log.read_ids(list(pointers.values()))
        saved = found[pointers[task_id]]
        assert isinstance(saved, CheckpointSaved)
        first_page = saved.cursor.page + 1
    for page in range(first_page, pages + 1):
        await stepper.step("fetching", f"{task_id} {page}")
        fetched = PageFetched(
            actor=name, task_id=task_id, attempt=1, url=f"{lease.task.url}?p={page}",
            status=200, page=page,
        )  # fmt: skip
        if page < pages:
            checkpoint = CheckpointSaved(
                actor=name, task_id=task_id, attempt=1, cursor=Cursor(page=page),
                counts=Counts(pages=page),
            )  # fmt: skip
            await queue.checkpoint(lease, checkpoint, before=[fetched])
            await stepper.step("checkpointed", f"{task_id} {page}")
        else:
            done = TaskDone(actor=name, task_id=task_id, attempt=1, counts=Counts(pages=page))
            await queue.finish(lease, done, before=[fetched])
            await stepper.step("finished", task_id)


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("job")
    parser.add_argument("name")
    parser.add_argument("pages", type=int)
    parser.add_argument("--stop-at")
    parser.add_argument("--reclaim", action="store_true", help="take over others' leases")
    args = parser.parse_args(argv)
    stepper = Stepper(args.stop_at)
    async with connect(args.url) as client:
        queue = TaskQueue(client, args.job, args.name)
        leases = await queue.pending(redeliver=True)  # a restart resumes its own PEL first
        if args.reclaim:
            leases += await queue.reclaim(1000, min_idle_ms=0)
        while True:
            for lease in leases:
                await stepper.step("claimed", lease.task.task_id)
                await run_task(queue, lease, args.pages, stepper)
            leases = await queue.claim(1)
            if not leases:
                return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv[1:]))
