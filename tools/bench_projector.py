"""Benchmark the projector against the raw read limit, and replay, reports and trimming.

    python tools/bench_projector.py [--quick]

In one run, on one private valkey-server (unix socket, AOF everysec):

  raw read + decode   EventLog.read_after over a stream of N events (the projector's input)
  project             a fresh projector catching up on the same stream: fold + archive +
                      commit (no trimming, so every round reads the same stream)
  replay 1M           replay_archive over an archive of 1M events (written as segments)
  report 10M          build_report over 10M archived events generated with Arrow
                      (tools/bench_report.py)
  memory              Redis used_memory with a 2M-event stream, and after it was projected
                      and trimmed (the dedup sets of recent event ids reported apart)

Medians of the rounds. Prints a table, then one JSON object as its last line.

The process's garbage collector is set as ``crawlog project`` sets it (``tune_gc``), for
the raw read as well as for the projector: both are measured in the same conditions.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).resolve().parent))

from eventlog import (
    START,
    CheckpointSaved,
    Counts,
    Cursor,
    EventLog,
    ItemScraped,
    LogEntry,
    PageFetched,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
    connect,
    encode,
    ensure_server,
    stop_server,
)
from projector import Manifest, Projector, Store, replay_archive, tune_gc, write_segment

FULL = {"events": 500_000, "replay": 1_000_000, "report": 10_000_000, "memory": 2_000_000}
QUICK = {"events": 100_000, "replay": 200_000, "report": 1_000_000, "memory": 200_000}
ROUNDS = 3
APPEND_BATCH = 2_000
SEGMENT_EVENTS = 100_000
SITE = "http://127.0.0.1:8000"

Event = TaskEnqueued | TaskClaimed | PageFetched | ItemScraped | CheckpointSaved | TaskDone


def crawl_events(n: int) -> list[Event]:
    """A realistic mix: per task, enqueued, claimed, two pages with an item and a checkpoint
    each, done — eight events."""
    events: list[Event] = []
    for t in range(n // 8 + 1):
        task_id, url = f"{t:016x}", f"{SITE}/docs/section-{t % 97}/page-{t}.html"
        events += [
            TaskEnqueued(actor="seed", task_id=task_id, url=url, site=SITE, depth=2),
            TaskClaimed(actor="worker-1", task_id=task_id, attempt=1),
        ]
        for page in (1, 2):
            events += [
                PageFetched(
                    actor="worker-1",
                    task_id=task_id,
                    attempt=1,
                    url=f"{url}?p={page}",
                    status=200,
                    bytes=10_240,
                    elapsed_ms=4.2,
                    page=page,
                ),
                ItemScraped(actor="worker-1", task_id=task_id, key=f"{task_id}-{page}"),
            ]
            if page == 1:
                events.append(
                    CheckpointSaved(
                        actor="worker-1",
                        task_id=task_id,
                        attempt=1,
                        cursor=Cursor(page=1),
                        counts=Counts(pages=1, items=1),
                    )
                )
        events.append(TaskDone(actor="worker-1", task_id=task_id, attempt=1))
    return events[:n]


async def timed(work: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await work()
    return time.perf_counter() - start


async def fill(log: EventLog, n: int) -> None:
    events = crawl_events(n)
    for start in range(0, n, APPEND_BATCH):
        await log.append_many(events[start : start + APPEND_BATCH])


async def bench_rates(client: aioredis.Redis, n: int, rounds: int) -> dict[str, float]:
    log = EventLog(client, f"bench-rate-{time.time_ns()}")
    await fill(log, n)

    async def read_decode() -> None:
        position, count = START, 0
        while batch := await log.read_after(position, 5_000):
            position, count = batch[-1].stream_id, count + len(batch)
        assert count == n

    raw, project = [], []
    for r in range(rounds):
        raw.append(n / await timed(read_decode))
        with tempfile.TemporaryDirectory() as tmp:
            projector = Projector(client, log.keys.job, Path(tmp), keep_tail_s=None)
            async with projector:
                project.append(n / await timed(projector.catch_up))
            assert projector.manifest.events == n
        # Freed before the next raw read: a projector's state left alive makes the raw read
        # of the next round measurably slower, flattering the ratio.
        del projector
        gc.collect()
        print(f"  round {r + 1}: raw read+decode {raw[-1]:,.0f}/s, project {project[-1]:,.0f}/s")
    await client.delete(log.keys.events)
    return {
        "raw_read_decode_per_s": statistics.median(raw),
        "project_per_s": statistics.median(project),
    }


def bench_replay(n: int) -> float:
    events = crawl_events(n)
    entries = [LogEntry(f"1700000000000-{i}", e, encode(e)) for i, e in enumerate(events)]
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp), "bench-replay")
        store.prepare()
        segments = tuple(
            write_segment(store.archive, entries[s : s + SEGMENT_EVENTS])
            for s in range(0, n, SEGMENT_EVENTS)
        )
        manifest = Manifest(job="bench-replay", segments=segments, events=n)
        times = []
        for _ in range(ROUNDS):
            start = time.perf_counter()
            state = replay_archive(store, manifest)
            times.append(time.perf_counter() - start)
        assert state.job.events == n
    return statistics.median(times)


async def bench_memory(client: aioredis.Redis, n: int) -> dict[str, float]:
    log = EventLog(client, f"bench-memory-{time.time_ns()}")
    await fill(log, n)
    info = await client.info("memory")
    before = info["used_memory"]
    stream_before = await client.memory_usage(log.keys.events) or 0
    with tempfile.TemporaryDirectory() as tmp:
        async with Projector(client, log.keys.job, Path(tmp), keep_tail_s=0) as projector:
            await projector.catch_up()
    after = (await client.info("memory"))["used_memory"]
    stream_after = await client.memory_usage(log.keys.events) or 0
    dedup = 0
    async for key in client.scan_iter(match=f"crawlog:{log.keys.tag}:eids:*"):
        dedup += await client.memory_usage(key) or 0
    mb = 1 / 2**20
    return {
        "redis_mem_before_mb": before * mb,
        "redis_mem_after_trim_mb": after * mb,
        "stream_mem_before_mb": stream_before * mb,
        "stream_mem_after_trim_mb": stream_after * mb,
        "dedup_sets_mb": dedup * mb,
        "stream_len_after_trim": await log.length(),
    }


def bench_report(n: int) -> float | None:
    try:
        import bench_report
    except ImportError:
        return None
    return float(bench_report.measure(n))


async def run(url: str, sizes: dict[str, int]) -> dict[str, float]:
    async with connect(url) as client:
        print(f"project: {sizes['events']:,} events, {ROUNDS} rounds")
        results = await bench_rates(client, sizes["events"], ROUNDS)
        print(f"memory: {sizes['memory']:,} events appended, projected, trimmed")
        results |= await bench_memory(client, sizes["memory"])
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, under a minute")
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    tune_gc()
    with tempfile.TemporaryDirectory(prefix="crawlog-bench-") as tmp:
        url = ensure_server(Path(tmp)).url
        try:
            results = anyio.run(run, url, sizes)
        finally:
            stop_server(Path(tmp))
    print(f"replay: {sizes['replay']:,} archived events")
    replay_s = bench_replay(sizes["replay"])
    results["replay_1m_s"] = replay_s * 1_000_000 / sizes["replay"]
    print(f"report: {sizes['report']:,} archived events")
    report_s = bench_report(sizes["report"])
    if report_s is not None:
        results["report_10m_s"] = report_s * 10_000_000 / sizes["report"]
    results["project_vs_raw"] = results["project_per_s"] / results["raw_read_decode_per_s"]
    results |= {"events": sizes["events"], "rounds": ROUNDS}
    scaled = " (scaled from a smaller run)" if args.quick else ""
    print(f"\n{'figure':<34} {'value':>14}")
    ratio = f"{results['project_vs_raw']:.2f} x raw, target >= 0.5"
    report_s = results.get("report_10m_s", float("nan"))
    rows = [
        ("raw read + decode, events/s", results["raw_read_decode_per_s"], ""),
        ("project, events/s", results["project_per_s"], ratio),
        ("replay of 1M archived events, s", results["replay_1m_s"], f"target <= 10{scaled}"),
        ("report over 10M events, s", report_s, f"target <= 2{scaled}"),
        ("Redis used_memory, full stream, MB", results["redis_mem_before_mb"], ""),
        ("Redis used_memory, trimmed, MB", results["redis_mem_after_trim_mb"], ""),
        ("  of which dedup id sets, MB", results["dedup_sets_mb"], "expire within 2 windows"),
        ("  events stream, trimmed, MB", results["stream_mem_after_trim_mb"], ""),
    ]
    for name, value, note in rows:
        print(f"{name:<34} {value:>14,.2f}  {note}")
    print(json.dumps({k: round(v, 3) for k, v in results.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
