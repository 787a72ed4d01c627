"""Benchmark the event log against the raw Redis limits of the same client and server.

    python tools/bench_eventlog.py [--quick] [--events N] [--rounds R]

In one run, on one private valkey-server (unix socket, AOF everysec, as crawlog runs it),
with the same ~150-byte events:

  (a) raw XADD of pre-encoded bytes, pipelined in batches of 1,000 (redis-py asyncio)
  (b) EventLog.append_many: encoding, the idempotency script, batches of 1,000
  (c) TaskQueue.enqueue: fingerprint set + task entry + TaskEnqueued, batches of 1,000
  (d) EventLog.read_after: XREAD of 1,000 at a time, decoded into events
  (e) raw XRANGE of 1,000 at a time, not decoded

Each figure is the median of the rounds. Prints a table, then as its last line one JSON
object with the rates and the ratios append_vs_raw = b/a and read_vs_raw = d/e.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import redis.asyncio as aioredis

from eventlog import (
    START,
    EventLog,
    PageFetched,
    Task,
    TaskQueue,
    connect,
    encode,
    ensure_server,
    stop_server,
)

BATCH = 1000
FULL_EVENTS = 200_000
QUICK_EVENTS = 50_000
ROUNDS = 5


def make_events(n: int) -> list[PageFetched]:
    return [
        PageFetched(
            actor="worker-1",
            task_id=f"{i:016x}",
            attempt=1,
            status=200,
            bytes=10240,
            url=f"http://127.0.0.1:8000/docs/section-{i % 97}/page-{i}.html",
            elapsed_ms=3.5,
        )
        for i in range(n)
    ]


def make_tasks(n: int) -> list[Task]:
    site = "http://127.0.0.1:8000"
    return [
        Task(task_id=f"{i:016x}", url=f"{site}/docs/page-{i}.html", site=site) for i in range(n)
    ]


async def timed(work: Callable[[], Awaitable[None]]) -> float:
    start = time.perf_counter()
    await work()
    return time.perf_counter() - start


async def bench_round(
    client: aioredis.Redis, events: list[PageFetched], round_no: int
) -> dict[str, float]:
    n = len(events)
    job = f"bench-{round_no}-{time.time_ns()}"
    log = EventLog(client, job)
    raw_stream = f"crawlog:{{{job}}}:raw"
    payloads = [encode(e) for e in events]

    async def raw_xadd() -> None:
        for start in range(0, n, BATCH):
            async with client.pipeline(transaction=False) as pipe:
                for payload in payloads[start : start + BATCH]:
                    pipe.xadd(raw_stream, {b"e": payload})
                await pipe.execute()

    async def append() -> None:
        for start in range(0, n, BATCH):
            await log.append_many(events[start : start + BATCH])

    tasks = make_tasks(n)
    queue = TaskQueue(client, f"{job}-queue", "bench")  # its events must not join the read
    await queue.ensure_groups()

    async def enqueue() -> None:
        for start in range(0, n, BATCH):
            await queue.enqueue(tasks[start : start + BATCH], actor="bench")

    async def read_decode() -> None:
        position, count = START, 0
        while batch := await log.read_after(position, BATCH):
            position, count = batch[-1].stream_id, count + len(batch)
        assert count == n, count

    async def raw_xrange() -> None:
        start, count = "-", 0
        while entries := await client.execute_command(  # type: ignore[no-untyped-call]
            "XRANGE", log.keys.events, start, "+", "COUNT", BATCH
        ):
            start, count = "(" + entries[-1][0].decode(), count + len(entries)
        assert count == n, count

    # Reads run on the stream that append() wrote, so both read the same entries.
    figures = {
        "raw_xadd_per_s": n / await timed(raw_xadd),
        "append_per_s": n / await timed(append),
        "enqueue_per_s": n / await timed(enqueue),
        "read_decode_per_s": n / await timed(read_decode),
        "raw_xrange_per_s": n / await timed(raw_xrange),
    }
    await client.delete(raw_stream, log.keys.events, log.keys.seen, *log.dedup_args()[0])
    await client.delete(*queue.keys.lanes, queue.keys.events, queue.keys.seen)
    await client.delete(*queue.log.dedup_args()[0])
    return figures


async def run(url: str, n: int, rounds: int) -> dict[str, float]:
    events = make_events(n)
    size = statistics.mean(len(encode(e)) for e in events[:1000])
    print(f"{n:,} events of ~{size:.0f} bytes per round, {rounds} rounds, batches of {BATCH:,}")
    results: list[dict[str, float]] = []
    async with connect(url) as client:
        for r in range(rounds):
            results.append(await bench_round(client, events, r))
            print(f"  round {r + 1}: " + ", ".join(f"{k}={v:,.0f}" for k, v in results[-1].items()))
    medians = {k: statistics.median(r[k] for r in results) for k in results[0]}
    medians["append_vs_raw"] = medians["append_per_s"] / medians["raw_xadd_per_s"]
    medians["read_vs_raw"] = medians["read_decode_per_s"] / medians["raw_xrange_per_s"]
    medians["events"] = n
    medians["rounds"] = rounds
    return medians


def print_table(m: dict[str, float]) -> None:
    rows = [
        ("(a) raw pipelined XADD, pre-encoded", m["raw_xadd_per_s"], ""),
        (
            "(b) EventLog.append_many",
            m["append_per_s"],
            f"{m['append_vs_raw']:.2f} x (a)  target >= 0.6",
        ),
        ("(c) TaskQueue.enqueue", m["enqueue_per_s"], ""),
        (
            "(d) EventLog.read_after + decode",
            m["read_decode_per_s"],
            f"{m['read_vs_raw']:.2f} x (e)  target >= 0.5",
        ),
        ("(e) raw XRANGE, not decoded", m["raw_xrange_per_s"], ""),
    ]
    print(f"\n{'medians':<40} {'events/s':>12}")
    for name, rate, note in rows:
        print(f"{name:<40} {rate:>12,.0f}  {note}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_EVENTS:,} events a round (< 60 s)"
    )
    parser.add_argument("--events", type=int, help="events per round")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--url", help="benchmark this server instead of a private one")
    args = parser.parse_args()
    n = args.events or (QUICK_EVENTS if args.quick else FULL_EVENTS)
    with tempfile.TemporaryDirectory(prefix="crawlog-bench-") as tmp:
        url = args.url or ensure_server(Path(tmp)).url
        try:
            medians = anyio.run(run, url, n, args.rounds)
        finally:
            if not args.url:
                stop_server(Path(tmp))
    print_table(medians)
    print(json.dumps({k: round(v, 3) for k, v in medians.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
