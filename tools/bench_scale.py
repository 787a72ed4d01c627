"""Benchmark crawlog at job sizes of 10k to 10M tasks: projector memory and cost per event,
state size, replay and report times, Redis bytes per URL, and a one-page crawl.

    python tools/bench_scale.py [--quick] [--sizes 10000,100000] [--redis-urls N]
                                [--tiny-runs 5] [--keep DIR] [--reads N] [--crawlog EXE]
                                [--small-runs 5]

Everything runs on one private valkey-server as crawlog starts it (``ensure_server``), in
a fresh data directory, and is measured through the public API and the command line only
(``crawlog project|replay|report``, ``crawlog crawl``), so it keeps measuring the same
thing whatever the projector's internals become.

**How the logs reach the projector.** Each size's log (about five events a task, shaped
like a crawl's: enqueued, claimed, page fetched, item scraped, done; one task in 50 gets a
503 and a retry, one in 200 a 404 and fails) is appended through the real `EventLog` API
(`append_many`, the worker's idempotent append script) while a real ``crawlog project``
subprocess consumes it and trims the stream behind its commits (``--keep-tail 0``). Going
through Redis rather than writing Arrow segments measures what a crawl's projector really
does (read, fold, archive, commit, snapshot, trim), and the concurrent trim keeps Redis
bounded (a 10M-task log untrimmed would be ~50M entries): the appender stays at most
`MAX_AHEAD` events ahead of what the projector committed. Per size:

  rss/task      peak RSS of the projector (``VmHWM``) minus its RSS once started, / tasks
  commit us/ev  the CPU (user + system, /proc) of the projector's whole process tree
                (the projector and its children: the segment writer) from the first
                append after the seed to its commit of the last event, / events appended
                in that span: its whole cost per event (fold, archive, commit, snapshot,
                trim), wherever the projector does the work
  own us/ev     the same, of the projector's own process only (what this column showed
                before the writer was counted)
  wall us/ev    the same span in wall time, / events
  state bytes   the job's projected files other than the event archive (snapshots, the
                state store), and their size per task
  stop s        SIGTERM to exit of the caught-up projector: its final commit and snapshot
  replay s      ``crawlog replay --job J`` (rebuild the whole state from archive + tail)
  report s      ``crawlog report --job J --json``
  history s     ``crawlog history --job J URL`` of the task in the middle of the log

**The seed.** The first ``SEED_EVENTS`` events (at most a fifth of the log) are appended
before the projector starts: a stream that long makes it start its segment writer as it
starts (importing Arrow, a few tenths of a second of CPU), before the measured span, as
its own start is; started in the middle of a 10k-task run, that import alone would be
several microseconds an event. The seed's events are not counted.

**Small sizes are built ``--small-runs`` times** (5; sizes up to 100k tasks, the later builds
as jobs ``scale-<tasks>-<n>``): a 10k-task log is projected in about a second and one
build's CPU per event varied by a third between runs, so the per-event costs are the
median of the builds (``*_min``, ``*_max``: their spread); the reads are timed on the first.

**Reusing a built job.** ``--keep DIR`` uses DIR as the data directory (its own server)
and leaves it there: a size whose job DIR already holds is not built again, only its reads
(replay, report, history) are timed, each ``--reads`` times (the median is reported, and
the spread). ``--crawlog EXE`` times another build's ``crawlog`` on the same job (A/B
against a baseline worktree). ``--redis-urls 0`` skips the Redis footprint.

**Redis bytes per URL.** ``--redis-urls`` URLs (default 1,000,000) are enqueued through
the real enqueue script (`TaskQueue.enqueue`, 1,000 a call), claimed (`TaskQueue.claim`)
and finished (`TaskQueue.finish` with the page's events before ``TaskDone``), while a
``crawlog project --keep-tail 0`` trims the stream (its periodic snapshots, which change
nothing in Redis, are left to its final commit: here it only trims); once it has committed
the end and stopped (SIGTERM: its final commit trims too), every key of the job is weighed with
``MEMORY USAGE`` (SCAN by the job's pattern, grouped by key shape) and ``INFO memory``.
``redis_bytes_per_url`` counts the keys that stay (the event-id sets of the dedup window
expire within two windows by themselves, and are shown apart); ``seen_bytes_per_url`` is
the seen buckets and their count, weighed as ``tools/bench_dedup.py`` weighs them.

**tiny_crawl_s**: the median of ``--tiny-runs`` (5) runs of
``/usr/bin/time crawlog crawl URL --depth 0`` against ``crawlog testsite``, each with a
fresh data directory (its own server started) and job.

**Commit flatness** (issue 37's decision): ``commit_us_per_event_10m`` is compared with
``commit_us_per_event_100k`` (``commit_10m_vs_100k``), two sizes that both leave the
projector's memory (a 10k job never evicts, merges or brings back); the 10k figure stays
beside them.

``--quick`` runs sizes up to 1M; ``--sizes none`` and ``--tiny-runs 0`` skip those parts.
Prints a table, then as its last line one JSON object; figures of sizes not run (the 10M
ones with ``--quick``) are null.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import redis.asyncio as aioredis

from eventlog import (
    AnyEvent,
    EventLog,
    ItemScraped,
    JobKeys,
    Lease,
    PageFetched,
    RetryScheduled,
    Task,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
    TaskFailed,
    TaskQueue,
    connect,
    ensure_server,
    stop_server,
)
from projector import job_dir

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dedup import fingerprints  # a tool beside this one

SIZES = (10_000, 100_000, 1_000_000, 10_000_000)
SMALL_RUNS = 5
"""Builds of each size under ``SMALL_MAX``: a 10k-task log is projected in about a second,
and one build's CPU per event varied by a third between runs, and by half on a busy
machine (of three builds, one could decide the median); the median is reported."""
SMALL_MAX = 100_000
QUICK_MAX = 1_000_000
REDIS_URLS = 1_000_000
TINY_RUNS = 5
TINY_PAGES = 20
APPEND_BATCH = 2_000
SEED_EVENTS = 10_000
"""Events appended before the projector starts (a stream this long starts its writer process
with it: ``projector``'s ``WRITER_MIN_EVENTS``), at most a fifth of the log."""
"""Events a call of `EventLog.append_many`."""
ENQUEUE_BATCH = 1_000
CLAIM_BATCH = 1_000
FINISH_CONCURRENCY = 32
MAX_AHEAD = 400_000
"""Events the appender may be ahead of the projector's commits: what Redis holds at most."""
RETRY_EVERY = 50
FAIL_EVERY = 200
SETTLE_S = 0.5
"""The projector counts as started once its RSS has not changed for this long."""
WAIT_TIMEOUT_S = 7_200
SITE = "https://docs.example.test"
ACTOR = "bench-worker"
ARCHIVE_DIR = "archive"

TARGETS = {
    "projector_bytes_per_task_10m": "<= 300",
    "commit_us_per_event_10m": "<= 1.25 x commit_us_per_event_100k",
    "replay_10m_s": "<= 60",
    "report_10m_tasks_s": "<= 2",
    "redis_bytes_per_url_1m": "<= 60",
    "seen_bytes_per_url_1m": "<= 16",
    "history_10m_s": "<= 0.5",
    "tiny_crawl_s": "<= 0.7",
}


def crawlog_exe() -> str:
    """The ``crawlog`` beside this Python (the worktree's venv), else the one on PATH."""
    beside = Path(sys.executable).with_name("crawlog")
    return str(beside) if beside.exists() else "crawlog"


def task_url(t: int) -> str:
    """The URL of task ``t``: canonical already, so ``crawlog history URL`` finds it."""
    return f"{SITE}/section-{t % 97}/page-{t}.html"


def task_events(t: int) -> list[AnyEvent]:
    """The events of task ``t`` as a crawl writes them."""
    url = task_url(t)
    task_id = hashlib.blake2b(url.encode(), digest_size=8).hexdigest()  # as crawlog keys it
    events: list[AnyEvent] = [
        TaskEnqueued(actor="seed", task_id=task_id, url=url, site=SITE, depth=2),
        TaskClaimed(actor=ACTOR, task_id=task_id, attempt=1),
    ]
    attempt = 1
    if t % RETRY_EVERY == 1:
        events += [
            PageFetched(actor=ACTOR, task_id=task_id, attempt=1, url=url, status=503, page=1),
            RetryScheduled(actor=ACTOR, task_id=task_id, attempt=1, delay_s=1.0, reason="503"),
            TaskClaimed(actor=ACTOR, task_id=task_id, attempt=2),
        ]
        attempt = 2
    if t % FAIL_EVERY == 3:
        return [
            *events,
            PageFetched(actor=ACTOR, task_id=task_id, attempt=attempt, url=url, status=404),
            TaskFailed(actor=ACTOR, task_id=task_id, attempt=attempt, reason="http 404"),
        ]
    return [
        *events,
        PageFetched(
            actor=ACTOR,
            task_id=task_id,
            attempt=attempt,
            url=url,
            status=200,
            bytes=24_576,
            elapsed_ms=12.5,
            page=1,
        ),
        ItemScraped(actor=ACTOR, task_id=task_id, key=f"{task_id}-1", data={"title": url}),
        TaskDone(actor=ACTOR, task_id=task_id, attempt=attempt),
    ]


def seed(tasks: int) -> list[AnyEvent]:
    """The log's first events, whole tasks, up to ``SEED_EVENTS`` or a fifth of the log."""
    limit = min(SEED_EVENTS, tasks)  # about five events a task: a fifth of the log
    events: list[AnyEvent] = []
    for t in range(tasks):
        if len(events) >= limit:
            break
        events += task_events(t)
    return events


def batches(tasks: int, *, skip: int = 0) -> Iterator[list[AnyEvent]]:
    """The log after its first ``skip`` events (whole tasks: a ``seed``), in batches."""
    batch: list[AnyEvent] = []
    skipped = 0
    for t in range(tasks):
        if skipped < skip:
            skipped += len(task_events(t))
            continue
        batch += task_events(t)
        if len(batch) >= APPEND_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


# --- the projector subprocess, watched through /proc ---------------------------------


def proc_status(pid: int, field: str) -> int:
    """A ``kB`` field of /proc/PID/status, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise LookupError(field)


def proc_cpu_s(pid: int, *, reaped: bool = False) -> float:
    """User + system CPU seconds of a process so far (with ``reaped``, also those of its
    children that ended and were waited for)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0  # ended meanwhile: its parent's reaped figures count it
    ticks = int(fields[11]) + int(fields[12])
    if reaped:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / os.sysconf("SC_CLK_TCK")


def proc_children(pid: int) -> list[int]:
    """The pids of a process's children (of every thread), as /proc lists them."""
    children: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                children += map(int, (task / "children").read_text().split())
    except (FileNotFoundError, ProcessLookupError):
        pass
    return children


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process and of every descendant, living or reaped: work moved
    into a child process still counts."""
    total, todo = proc_cpu_s(pid, reaped=True), proc_children(pid)
    while todo:
        child = todo.pop()
        total += proc_cpu_s(child, reaped=True)
        todo += proc_children(child)
    return total


class ProjectorProcess:
    """``crawlog project --job J --keep-tail 0`` as a subprocess."""

    def __init__(self, data_dir: Path, job: str, *options: str) -> None:
        self.data_dir, self.job = data_dir, job
        self.proc = subprocess.Popen(
            [crawlog_exe(), "project", "--job", job, "--data-dir", str(data_dir),
             "--keep-tail", "0", "--log-level", "warning", *options],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        self.start_rss = self._settled_rss()

    def _settled_rss(self) -> int:
        last, since = -1, time.monotonic()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"crawlog project exited with {self.proc.returncode}")
            rss = proc_status(self.proc.pid, "VmRSS")
            if rss != last:
                last, since = rss, time.monotonic()
            elif time.monotonic() - since >= SETTLE_S:
                return rss
            time.sleep(0.05)
        return last

    def cpu_s(self) -> float:
        """CPU seconds of the projector's process tree (its writer included)."""
        return tree_cpu_s(self.proc.pid)

    def own_cpu_s(self) -> float:
        """CPU seconds of the projector's own process."""
        return proc_cpu_s(self.proc.pid)

    def peak_rss(self) -> int:
        return proc_status(self.proc.pid, "VmHWM")

    def wait_for_last(self) -> None:
        """Until the projector has committed the log's newest entry."""
        subprocess.run(
            [crawlog_exe(), "project", "--job", self.job, "--data-dir", str(self.data_dir),
             "--wait-for", "last", "--timeout", str(WAIT_TIMEOUT_S)],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip

    def stop(self) -> float:
        """SIGTERM; seconds until it exited (its final commit)."""
        started = time.perf_counter()
        self.proc.send_signal(signal.SIGTERM)
        if self.proc.wait(timeout=600) != 0:
            raise RuntimeError(f"crawlog project exited with {self.proc.returncode}")
        return time.perf_counter() - started


def timed_cli(*args: str, exe: str | None = None) -> float:
    started = time.perf_counter()
    subprocess.run([exe or crawlog_exe(), *args], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def timed_reads(data_dir: Path, tasks: int, runs: int, exe: str | None) -> dict[str, float]:
    """Median (and spread) of ``runs`` times of each read command on a built job."""
    where = ("--job", job_name(tasks), "--data-dir", str(data_dir))
    url = task_url(tasks // 2)
    commands = {
        "replay_s": ("replay", *where),
        "report_s": ("report", *where, "--json"),
        "history_s": ("history", *where, url),
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, args in commands.items():
            times[name].append(timed_cli(*args, exe=exe))
    figures: dict[str, float] = {}
    for name, values in times.items():
        if not values:  # ``--reads 0``: the job built and projected, no read timed
            continue
        figures[name] = statistics.median(values)
        figures[name.replace("_s", "_min_s")] = min(values)
        figures[name.replace("_s", "_max_s")] = max(values)
    return figures


def tree_bytes(root: Path, *, skip: str | None = None) -> int:
    total = 0
    for path in root.rglob("*"):
        if skip is not None and skip in path.relative_to(root).parts:
            continue
        if path.is_file():
            total += path.stat().st_size
    return total


# --- one size: a log projected -------------------------------------------------------


async def committed_events(log: EventLog) -> int:
    """Events of the log the projector has not trimmed yet (how far ahead we are)."""
    return await log.length()


async def append_log(client: aioredis.Redis, job: str, tasks: int, projector: ProjectorProcess,
                     first: list[AnyEvent]) -> tuple[int, float, float, float]:  # fmt: skip
    """Append the log after the seed ``first``; (events appended, the projector tree's CPU
    s, its own CPU s, wall s) up to its commit of the last one."""
    log = EventLog(client, job)
    cpu0, own0, wall0 = projector.cpu_s(), projector.own_cpu_s(), time.perf_counter()
    events = 0
    for batch in batches(tasks, skip=len(first)):
        await log.append_many(batch)
        events += len(batch)
        if events % (APPEND_BATCH * 50) < len(batch):
            # The projector trims what it committed: the stream's length is how far behind.
            while await committed_events(log) > MAX_AHEAD:
                await anyio.sleep(0.2)
    await anyio.to_thread.run_sync(projector.wait_for_last)
    cpu, own = projector.cpu_s() - cpu0, projector.own_cpu_s() - own0
    return events, cpu, own, time.perf_counter() - wall0


def built(data_dir: Path, tasks: int, run: int = 1) -> bool:
    """Whether ``data_dir`` holds the projected job of this size already (``--keep``)."""
    return (job_dir(data_dir, job_name(tasks, run)) / "manifest.json").exists()


def job_name(tasks: int, run: int = 1) -> str:
    """The job of a size's build: ``scale-<tasks>``, and ``scale-<tasks>-<run>`` for the
    builds after the first."""
    return f"scale-{tasks}" if run == 1 else f"scale-{tasks}-{run}"


def measure_size(
    url: str, data_dir: Path, tasks: int, *, reads: int = 1, exe: str | None = None, run: int = 1
) -> dict[str, float]:
    """One size built, projected and read; ``run`` > 1: another build of it, as job
    ``scale-<tasks>-<run>``, whose reads are not timed."""
    job = job_name(tasks, run)
    if run > 1:
        if built(data_dir, tasks, run):
            raise RuntimeError(f"{job} is built already: use another --keep directory")
        reads = 0
    elif built(data_dir, tasks):
        return {"tasks": tasks, **timed_reads(data_dir, tasks, reads, exe)}
    first = seed(tasks)

    async def append_seed() -> None:
        async with connect(url) as client:
            log = EventLog(client, job)
            for start in range(0, len(first), APPEND_BATCH):
                await log.append_many(first[start : start + APPEND_BATCH])

    anyio.run(append_seed)
    projector = ProjectorProcess(data_dir, job)
    try:

        async def rest() -> tuple[int, float, float, float]:
            async with connect(url) as client:
                return await append_log(client, job, tasks, projector, first)

        events, cpu_s, own_s, wall_s = anyio.run(rest)
        peak = projector.peak_rss()
    finally:
        stop_s = projector.stop()
    directory = job_dir(data_dir, job)
    state_bytes = tree_bytes(directory, skip=ARCHIVE_DIR)
    return {
        "tasks": tasks,
        "events": events + len(first),
        "measured_events": events,
        "projector_bytes_per_task": max(peak - projector.start_rss, 0) / tasks,
        "projector_start_rss_mb": projector.start_rss / 2**20,
        "projector_peak_rss_mb": peak / 2**20,
        "commit_us_per_event": cpu_s / events * 1e6,
        "own_us_per_event": own_s / events * 1e6,
        "wall_us_per_event": wall_s / events * 1e6,
        "snapshot_bytes": state_bytes,
        "snapshot_bytes_per_task": state_bytes / tasks,
        "snapshot_s": stop_s,
        **timed_reads(data_dir, tasks, reads, exe),
    }


# --- Redis bytes per URL of a finished, trimmed job ----------------------------------

_DIGITS = re.compile(r"(?<=:)\d+(?=:|$)")


def key_shape(keys: JobKeys, key: str) -> str:
    """``seen:123`` -> ``seen:<n>``: one row per kind of key."""
    return _DIGITS.sub("<n>", keys.short(key))


async def weigh_job(client: aioredis.Redis, keys: JobKeys) -> dict[str, dict[str, float]]:
    """MEMORY USAGE of every key of the job, summed by key shape, with counts and TTLs."""
    found = [key async for key in client.scan_iter(match=keys.pattern, count=10_000)]
    rows: dict[str, dict[str, float]] = {}
    for start in range(0, len(found), 1_000):
        chunk = found[start : start + 1_000]
        async with client.pipeline(transaction=False) as pipe:
            for key in chunk:
                pipe.memory_usage(key, samples=0)
                pipe.ttl(key)
            replies = await pipe.execute()
        for key, size, ttl in zip(chunk, replies[::2], replies[1::2], strict=True):
            row = rows.setdefault(
                key_shape(keys, key.decode()), {"keys": 0, "bytes": 0, "expiring": 0}
            )
            row["keys"] += 1
            row["bytes"] += size or 0
            row["expiring"] += 1 if ttl >= 0 else 0
    return rows


async def finish_all(queue: TaskQueue, limiter: anyio.CapacityLimiter) -> int:
    """Claim and finish every task in the queue; how many."""
    finished = 0

    async def finish(lease: Lease) -> None:
        async with limiter:
            task = lease.task
            page = PageFetched(actor=ACTOR, task_id=task.task_id, attempt=1, url=task.url,
                               status=200, bytes=24_576, elapsed_ms=12.5, page=1)  # fmt: skip
            await queue.finish(
                lease,
                TaskDone(actor=ACTOR, task_id=task.task_id, attempt=1),
                before=[
                    TaskClaimed(actor=ACTOR, task_id=task.task_id, attempt=1),
                    page,
                    ItemScraped(actor=ACTOR, task_id=task.task_id, key=f"{task.task_id}-1"),
                ],
            )

    while leases := await queue.claim(CLAIM_BATCH):
        async with anyio.create_task_group() as group:
            for lease in leases:
                group.start_soon(finish, lease)
        finished += len(leases)
    return finished


@dataclass(frozen=True)
class RedisFootprint:
    """What a finished, trimmed job of ``urls`` URLs left in Redis."""

    urls: int
    finished: int
    rows: dict[str, dict[str, float]]
    """Key shape -> keys, bytes (MEMORY USAGE), how many of them expire."""
    bytes_per_url: float
    """The keys that stay."""
    with_expiring_per_url: float
    used_memory_per_url: float
    seen_bytes_per_url: float


def measure_redis(url: str, data_dir: Path, urls: int) -> RedisFootprint:
    job = f"scale-redis-{urls}"
    keys = JobKeys(job)

    # Task ids as crawlog makes them (a URL's fingerprint): they pick the seen buckets.
    ids = fingerprints(urls, 0)

    def url_tasks(start: int) -> list[Task]:
        return [
            Task(task_id=ids[i], url=f"{SITE}/p/{i}", site=SITE)
            for i in range(start, min(start + ENQUEUE_BATCH, urls))
        ]

    async def used_memory() -> int:
        async with connect(url) as client:
            return int((await client.info("memory"))["used_memory"])

    async def first_batch() -> None:
        async with connect(url) as client:
            await TaskQueue(client, job, ACTOR).enqueue(url_tasks(0), actor="seed")

    before = anyio.run(used_memory)
    anyio.run(first_batch)
    # Here the projector only trims (what it keeps is measured by the sizes above): its
    # snapshots, which change nothing in Redis, are left to its final commit.
    projector = ProjectorProcess(data_dir, job, "--snapshot-interval", str(WAIT_TIMEOUT_S))
    try:

        async def crawl() -> int:
            async with connect(url) as client:
                queue = TaskQueue(client, job, ACTOR)
                limiter = anyio.CapacityLimiter(FINISH_CONCURRENCY)
                done = 0
                for start in range(ENQUEUE_BATCH, urls, ENQUEUE_BATCH * 10):
                    for sub in range(start, min(start + ENQUEUE_BATCH * 10, urls), ENQUEUE_BATCH):
                        await queue.enqueue(url_tasks(sub), actor="seed")
                    done += await finish_all(queue, limiter)
                    while await queue.log.length() > MAX_AHEAD:
                        await anyio.sleep(0.2)
                done += await finish_all(queue, limiter)
                return done

        finished = anyio.run(crawl)
        projector.wait_for_last()
    finally:
        projector.stop()

    async def weigh() -> dict[str, dict[str, float]]:
        async with connect(url) as client:
            return await weigh_job(client, keys)

    rows, after = anyio.run(weigh), anyio.run(used_memory)
    staying = sum(r["bytes"] for r in rows.values() if r["expiring"] < r["keys"])
    expiring = sum(r["bytes"] for r in rows.values() if r["expiring"] == r["keys"])
    seen = sum(b["bytes"] for shape, b in rows.items() if shape.startswith("seen:"))
    return RedisFootprint(
        urls=urls,
        finished=finished,
        rows=rows,
        bytes_per_url=staying / urls,
        with_expiring_per_url=(staying + expiring) / urls,
        used_memory_per_url=(after - before) / urls,
        seen_bytes_per_url=seen / urls,
    )


# --- a one-page crawl ------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def measure_tiny(runs: int) -> list[float]:
    port = free_port()
    site = subprocess.Popen(
        [crawlog_exe(), "testsite", "--port", str(port), "--pages", str(TINY_PAGES)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or site.poll() is not None:
                    raise RuntimeError("the test site did not start") from None
                time.sleep(0.05)
        times = []
        for run in range(runs):
            with tempfile.TemporaryDirectory(prefix="crawlog-tiny-") as tmp:
                out = subprocess.run(
                    ["/usr/bin/time", "-f", "%e", crawlog_exe(), "crawl",
                     f"http://127.0.0.1:{port}/", "--depth", "0", "--job", f"tiny-{run}",
                     "--data-dir", tmp],
                    check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                )  # fmt: skip
                times.append(float(out.stderr.strip().splitlines()[-1]))
                stop_server(Path(tmp))
        return times
    finally:
        site.terminate()
        site.wait(timeout=10)


# --- the whole run ---------------------------------------------------------------------

_PER_BUILD = ("commit_us_per_event", "own_us_per_event", "wall_us_per_event")


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    """The first build's figures, with the per-event costs the median of every build's
    (and their spread, if more than one)."""
    figures = dict(runs[0])
    if len(runs) > 1:
        for name in _PER_BUILD:
            values = [r[name] for r in runs]
            figures[name] = statistics.median(values)
            figures[name.replace("_per_event", "_min")] = min(values)
            figures[name.replace("_per_event", "_max")] = max(values)
        figures["builds"] = len(runs)
    return figures


def fmt(value: object, spec: str = ",.1f") -> str:
    return "-" if value is None else format(value, spec)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"sizes up to {QUICK_MAX:,}")
    parser.add_argument(
        "--sizes", help="comma-separated task counts (default: all four; 'none': no sizes)"
    )
    parser.add_argument("--redis-urls", type=int, default=REDIS_URLS)
    parser.add_argument("--tiny-runs", type=int, default=TINY_RUNS, help="0: no one-page crawl")
    parser.add_argument(
        "--keep", type=Path, metavar="DIR",
        help="data directory to build the jobs in and keep (a job built there is reused)",
    )  # fmt: skip
    parser.add_argument("--reads", type=int, default=1, help="times each read command is timed")
    parser.add_argument(
        "--small-runs", type=int, default=SMALL_RUNS,
        help=f"builds of each size up to {SMALL_MAX:,} tasks (the median is reported)",
    )  # fmt: skip
    parser.add_argument("--crawlog", metavar="EXE", help="the crawlog whose reads are timed")
    args = parser.parse_args()
    # A SIGTERM ends the run through its finally blocks (as Ctrl-C does), which stop the
    # projectors and the server it started: they outlive a bench killed outright.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    if args.sizes == "none":
        sizes = []
    else:
        sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else list(SIZES)
    if args.quick:
        sizes = [s for s in sizes if s <= QUICK_MAX]
    results: dict[int, dict[str, float]] = {}
    redis: RedisFootprint | None = None
    with contextlib.ExitStack() as stack:
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            data_dir = args.keep.resolve()
        else:
            data_dir = Path(
                stack.enter_context(tempfile.TemporaryDirectory(prefix="crawlog-scale-"))
            )
        url = ensure_server(data_dir).url
        try:
            for size in sizes:
                what = "timing reads" if built(data_dir, size) else "appending and projecting"
                print(f"size {size:,}: {what}", file=sys.stderr)
                runs = [measure_size(url, data_dir, size, reads=args.reads, exe=args.crawlog)]
                if "commit_us_per_event" in runs[0] and size <= SMALL_MAX:
                    runs += [
                        measure_size(url, data_dir, size, run=n)
                        for n in range(2, args.small_runs + 1)
                    ]
                results[size] = median_of(runs)
                print(f"size {size:,}: {json.dumps(results[size])}", file=sys.stderr)
            if args.redis_urls > 0:
                print(f"redis: {args.redis_urls:,} URLs enqueued and finished", file=sys.stderr)
                redis = measure_redis(url, data_dir, args.redis_urls)
        finally:
            stop_server(data_dir)
    print(f"one-page crawl: {args.tiny_runs} runs", file=sys.stderr)
    tiny = measure_tiny(args.tiny_runs) if args.tiny_runs > 0 else []

    print(f"{'tasks':>11} {'events':>11} {'rss B/task':>10} {'commit us/ev':>12} "
          f"{'own us/ev':>9} {'wall us/ev':>10} {'state MB':>9} {'B/task':>7} {'stop s':>7} "
          f"{'replay s':>8} {'report s':>8} {'history s':>9}")  # fmt: skip
    for size, r in results.items():
        state_mb = r["snapshot_bytes"] / 2**20 if "snapshot_bytes" in r else None
        print(
            f"{size:>11,} {fmt(r.get('events'), ',.0f'):>11} "
            f"{fmt(r.get('projector_bytes_per_task'), ',.0f'):>10} "
            f"{fmt(r.get('commit_us_per_event'), '.2f'):>12} "
            f"{fmt(r.get('own_us_per_event'), '.2f'):>9} "
            f"{fmt(r.get('wall_us_per_event'), '.2f'):>10} {fmt(state_mb, '.1f'):>9} "
            f"{fmt(r.get('snapshot_bytes_per_task'), '.0f'):>7} "
            f"{fmt(r.get('snapshot_s'), '.2f'):>7} {fmt(r.get('replay_s'), '.2f'):>8} "
            f"{fmt(r.get('report_s'), '.2f'):>8} {fmt(r.get('history_s'), '.2f'):>9}"
        )
    if redis is not None:
        urls = redis.urls
        print(f"\nRedis after {urls:,} URLs enqueued, claimed, finished, projected and trimmed:")
        print(f"{'key':<24} {'keys':>7} {'bytes':>13} {'B/URL':>8} {'expires':>8}")
        for shape, row in sorted(redis.rows.items(), key=lambda kv: -kv[1]["bytes"]):
            expires = "yes" if row["expiring"] == row["keys"] else "no"
            print(f"{shape:<24} {row['keys']:>7,.0f} {row['bytes']:>13,.0f} "
                  f"{row['bytes'] / urls:>8.2f} {expires:>8}")  # fmt: skip
        print(f"staying: {redis.bytes_per_url:.2f} B/URL; with the expiring sets "
              f"{redis.with_expiring_per_url:.2f}; INFO used_memory delta "
              f"{redis.used_memory_per_url:.2f}")  # fmt: skip
    print(f"one-page crawl, s: {', '.join(f'{t:.2f}' for t in tiny)}")

    def at(size: int, field: str) -> float | None:
        value = results.get(size, {}).get(field)
        return None if value is None else round(value, 3)

    def ratio(top: float | None, bottom: float | None) -> float | None:
        return None if top is None or not bottom else round(top / bottom, 3)

    def of_redis(field: str) -> float | None:
        return None if redis is None else round(getattr(redis, field), 2)

    one_m = redis is not None and redis.urls == REDIS_URLS
    summary: dict[str, object] = {
        "projector_bytes_per_task_10m": at(10_000_000, "projector_bytes_per_task"),
        "commit_us_per_event_10k": at(10_000, "commit_us_per_event"),
        "commit_us_per_event_100k": at(100_000, "commit_us_per_event"),
        "commit_us_per_event_10m": at(10_000_000, "commit_us_per_event"),
        "commit_10m_vs_100k": ratio(
            at(10_000_000, "commit_us_per_event"), at(100_000, "commit_us_per_event")
        ),
        "replay_10m_s": at(10_000_000, "replay_s"),
        "report_10m_tasks_s": at(10_000_000, "report_s"),
        "redis_bytes_per_url_1m": of_redis("bytes_per_url") if one_m else None,
        "seen_bytes_per_url_1m": of_redis("seen_bytes_per_url") if one_m else None,
        "tiny_crawl_s": round(statistics.median(tiny), 3) if tiny else None,
        "tiny_crawl_spread_s": [round(min(tiny), 3), round(max(tiny), 3)] if tiny else None,
        "history_10m_s": at(10_000_000, "history_s"),
        "redis_urls": None if redis is None else redis.urls,
        "redis_bytes_per_url": of_redis("bytes_per_url"),
        "redis_bytes_per_url_with_expiring": of_redis("with_expiring_per_url"),
        "used_memory_bytes_per_url": of_redis("used_memory_per_url"),
        "seen_bytes_per_url": of_redis("seen_bytes_per_url"),
        "sizes": {str(size): {k: round(v, 3) for k, v in r.items()} for size, r in results.items()},
        "not_run": [s for s in SIZES if s not in results],
        "targets": TARGETS,
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
