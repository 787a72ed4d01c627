"""``crawlog demo``: a worker killed with SIGKILL mid-crawl, and an exact resume.

The demo's workers crawl synthetic paginated listings (no network): each task is a listing
of ``pages`` pages, and per page a worker appends the page's ``PageFetched`` event together
with a checkpoint (the last page: with ``TaskDone``) in one fenced call. Two workers run;
at about 40 % one is killed with SIGKILL; the other takes over its leases once they expire
and resumes each task after its last checkpoint; a replacement worker joins. At the end the
log itself is checked: every task done exactly once, every page recorded exactly once,
nothing lost. The HTTP crawler will replace the synthetic pages; the log works the same.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
import click
import msgspec

from eventlog import (
    CheckpointSaved,
    Counts,
    Cursor,
    EventLog,
    Lease,
    LogEntry,
    PageFetched,
    Task,
    TaskClaimed,
    TaskDone,
    TaskQueue,
    TaskReclaimed,
    connect,
)
from eventlog._connection import command
from eventlog._server import resolve_url

DEMO_TASKS = 200
DEMO_PAGES = 5
PAGE_TIME_S = 0.004
"""Time a synthetic page takes to "fetch"; sets the demo's pace."""
DEMO_LEASE_MS = 1_500
"""Short leases so the demo's recovery happens within seconds."""
KILL_AT = 0.4
PROGRESS_EVERY_S = 0.5
KILL_POLL_S = 0.002
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
            actor=name, task_id=task_id, attempt=attempt, url=f"{lease.task.url}?page={page}",
            status=200, page=page,
        )  # fmt: skip
        if page < pages:
            saved = CheckpointSaved(
                actor=name, task_id=task_id, attempt=attempt, cursor=Cursor(page=page),
                counts=Counts(pages=page),
            )  # fmt: skip
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
    pages: int = DEMO_PAGES,
    page_time_s: float = PAGE_TIME_S,
    lease_ms: int = DEMO_LEASE_MS,
    reclaim_idle_ms: int | None = None,
    on_step: OnStep = _quiet,
) -> None:
    """Work on the job's tasks until none is left: own leases first, then new, then expired."""
    async with connect(url) as client:
        queue = TaskQueue(client, job, name, lease_ms=lease_ms)
        leases = await queue.pending(redeliver=True)  # a restart resumes its own leases first
        while True:
            for lease in leases:
                await on_step("claimed", lease.task.task_id)
                await run_task(queue, lease, pages, page_time_s, on_step)
            leases = await queue.claim(1, block_ms=IDLE_BLOCK_MS)
            if leases:
                await queue.log.append_many([claimed_event(name, lease) for lease in leases])
                continue
            leases = await queue.reclaim(min_idle_ms=reclaim_idle_ms)
            if leases:
                await queue.log.append_many([reclaimed_event(name, lease) for lease in leases])
            elif await queue.remaining() == 0:
                return


def claimed_event(worker: str, lease: Lease) -> TaskClaimed:
    return TaskClaimed(
        actor=worker, task_id=lease.task.task_id, attempt=lease.task.attempt,
        deliveries=lease.deliveries,
    )  # fmt: skip


def reclaimed_event(worker: str, lease: Lease) -> TaskReclaimed:
    return TaskReclaimed(
        actor=worker, task_id=lease.task.task_id, attempt=lease.task.attempt,
        previous_owner=lease.previous_owner or "?", deliveries=lease.deliveries,
    )  # fmt: skip


# --- the orchestration ------------------------------------------------------------------------


@dataclass
class Verdict:
    """What the log says about the finished demo job."""

    tasks: int
    done: Counter[str] = field(default_factory=Counter)
    pages: Counter[tuple[str, int]] = field(default_factory=Counter)
    resumed: dict[str, int] = field(default_factory=dict)
    """Task id -> first page fetched after it was taken over from the killed worker."""

    @property
    def finished_twice(self) -> int:
        return sum(1 for n in self.done.values() if n > 1)

    @property
    def pages_twice(self) -> int:
        return sum(1 for n in self.pages.values() if n > 1)

    def lost(self, pages_per_task: int) -> int:
        return self.tasks * pages_per_task - len(self.pages)

    def holds(self, pages_per_task: int) -> bool:
        return (
            len(self.done) == self.tasks
            and self.finished_twice == 0
            and self.pages_twice == 0
            and self.lost(pages_per_task) == 0
        )


def verdict_of(entries: list[LogEntry], tasks: int) -> Verdict:
    verdict = Verdict(tasks)
    taken_over: set[str] = set()
    for entry in entries:
        event = entry.event
        if isinstance(event, TaskDone):
            verdict.done[event.task_id] += 1
        elif isinstance(event, PageFetched):
            verdict.pages[(event.task_id, event.page)] += 1
            if event.task_id in taken_over and event.task_id not in verdict.resumed:
                verdict.resumed[event.task_id] = event.page
        elif isinstance(event, TaskReclaimed):
            taken_over.add(event.task_id)
    return verdict


def spawn_worker(url: str, job: str, name: str, pages: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "crawler.demo", url, job, name, str(pages)],
        stdin=subprocess.DEVNULL,
    )


async def run_demo(url: str, tasks: int, pages: int, echo: Callable[[str], None]) -> bool:
    """Run the demo against the server at ``url``; True if every invariant held."""
    job = f"demo-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    async with connect(url) as client:
        queue = TaskQueue(client, job, "demo")
        sites = [f"demo://site-{n}" for n in range(4)]
        listings = [
            Task(task_id=f"listing-{n:04d}", url=f"{sites[n % 4]}/listing/{n}", site=sites[n % 4])
            for n in range(tasks)
        ]
        await queue.enqueue(listings, actor="demo")
        echo(f"job {job}: {tasks} listings of {pages} pages each, 2 workers")

        workers = {name: spawn_worker(url, job, name, pages) for name in ("w1", "w2")}
        try:
            killed = await _kill_one_at(queue, workers["w1"], tasks, echo)
            workers["w3"] = spawn_worker(url, job, "w3", pages)
            echo("started replacement worker w3")
            await _wait_until_done(queue, workers, tasks, echo)
        finally:
            for process in workers.values():
                if process.poll() is None:
                    process.kill()
                process.wait()

        entries = await EventLog(client, job).read_range()
        return _report(job, entries, tasks, pages, killed, echo)


async def _kill_one_at(
    queue: TaskQueue, victim: subprocess.Popen[bytes], tasks: int, echo: Callable[[str], None]
) -> list[tuple[int, str]]:
    """SIGKILL w1 once 40 % is done, at the worst moment: mid-task, past a checkpoint."""
    while True:
        done = tasks - await queue.remaining()
        if done >= KILL_AT * tasks and await _mid_task(queue, "w1"):
            break
        await anyio.sleep(KILL_POLL_S)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    held = await queue.leases_of("w1")
    echo(
        f"killed w1 (pid {victim.pid}) with SIGKILL at {done / tasks:.0%} "
        f"({done}/{tasks} done); it held {len(held)} task(s) mid-way"
    )
    return held


async def _mid_task(queue: TaskQueue, worker: str) -> bool:
    """Whether ``worker`` holds a task that already has a checkpoint."""
    held = await queue.leases_of(worker)
    if not held:
        return False
    lane, entry_id = held[0]
    raw = await command(queue.redis, "XRANGE", queue.keys.tasks(lane), entry_id, entry_id)
    if not raw:
        return False
    task = msgspec.msgpack.decode(raw[0][1][1], type=Task)
    return bool(await queue.checkpoint_ids([task.task_id]))


async def _wait_until_done(
    queue: TaskQueue,
    workers: dict[str, subprocess.Popen[bytes]],
    tasks: int,
    echo: Callable[[str], None],
) -> None:
    alive = [p for name, p in workers.items() if name != "w1"]
    last = 0.0
    while any(p.poll() is None for p in alive):
        if time.monotonic() - last >= PROGRESS_EVERY_S:
            done = tasks - await queue.remaining()
            echo(f"  {done / tasks:4.0%}  {done}/{tasks} listings done")
            last = time.monotonic()
        await anyio.sleep(0.05)
    for process in alive:
        if process.returncode != 0:
            raise click.ClickException(f"a demo worker exited with status {process.returncode}")


def _report(
    job: str,
    entries: list[LogEntry],
    tasks: int,
    pages: int,
    killed: list[tuple[int, str]],
    echo: Callable[[str], None],
) -> bool:
    verdict = verdict_of(entries, tasks)
    echo("")
    echo(f"from the log of {job} ({len(entries)} events):")
    echo(f"  listings done:           {len(verdict.done)}/{tasks}")
    echo(f"  pages recorded:          {len(verdict.pages)}/{tasks * pages}")
    echo(f"  listings done twice:     {verdict.finished_twice}")
    echo(f"  pages recorded twice:    {verdict.pages_twice}")
    echo(f"  pages lost:              {verdict.lost(pages)}")
    for task_id, page in sorted(verdict.resumed.items()):
        echo(f"  {task_id} taken over from the killed worker, resumed at page {page}")
    ok = verdict.holds(pages)
    echo("every invariant holds" if ok else "AN INVARIANT FAILED")
    return ok


@click.command("demo", epilog="Example:  crawlog demo --tasks 100")
@click.option("--tasks", type=click.IntRange(10, 100_000), default=DEMO_TASKS, show_default=True)
@click.option("--pages", type=click.IntRange(2, 1000), default=DEMO_PAGES, show_default=True)
@click.option("--data-dir", type=click.Path(), default=None, help="Data directory of the server.")
@click.pass_context
def demo_command(ctx: click.Context, tasks: int, pages: int, data_dir: str | None) -> None:
    """Kill a worker with SIGKILL mid-crawl and show that nothing is lost or done twice.

    Uses the server of the data directory (started if needed), or REDIS_URL. Exits 0 only
    if the log shows every listing done once, every page recorded once, and none lost.
    """
    url = resolve_url(data_dir)
    ok = anyio.run(run_demo, url, tasks, pages, click.echo)
    ctx.exit(0 if ok else 1)


def main(argv: list[str]) -> int:
    """Worker entry point: ``python -m crawler.demo URL JOB NAME PAGES``."""
    url, job, name, pages = argv
    anyio.run(lambda: run_worker(url, job, name, pages=int(pages)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
