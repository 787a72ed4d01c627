"""Benchmark the shared per-host politeness gate: what one slot costs, and that limits hold.

    python tools/bench_politeness.py [--pairs N] [--seconds S] [--url URL]

On one private valkey-server (unix socket, as crawlog runs it), one host throughout:

  (a) raw PING round trips, one at a time (redis-py asyncio): the floor of any round trip
  (b) slot acquire + release pairs, one at a time, per_host=1000, delay 0 (two round trips)
  (c) the same pairs from many tasks of one client at once
  (d) 3 processes of several tasks each on one host with per_host=2 for S seconds: every
      holder counts itself into a witness counter (INCR after acquiring, DECR before
      releasing) and the parent samples ZCARD of the slots; neither may ever exceed 2

Prints a table, then as its last line one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import redis.asyncio as aioredis

from crawler import Politeness, PolitenessGate
from eventlog import JobKeys, connect, ensure_server, stop_server

HOST = "bench.example"
PAIRS = 20_000
CONCURRENT_TASKS = 50
SHARED_PROCESSES = 3
SHARED_PER_HOST = 2
SHARED_TASKS = 8
"""Tasks per process in (d): more than the limit, so every process keeps waiters queued."""
SHARED_SECONDS = 3.0
WIDE_PER_HOST = 1000
SAMPLE_EVERY_S = 0.001
"""Often enough to catch an excess, rarely enough to leave the CPU to the workers."""


async def timed_rate(count: int, work: Callable[[], Awaitable[None]]) -> float:
    start = time.perf_counter()
    await work()
    return count / (time.perf_counter() - start)


async def single_client(url: str, pairs: int) -> dict[str, float]:
    async with connect(url) as client:
        gate = PolitenessGate(client, f"bench-{time.time_ns()}", Politeness(per_host=WIDE_PER_HOST))

        async def pings() -> None:
            for _ in range(pairs):
                await client.ping()

        async def sequential() -> None:
            for _ in range(pairs):
                async with gate.slot(HOST):
                    pass

        async def concurrent() -> None:
            async def loop() -> None:
                for _ in range(pairs // CONCURRENT_TASKS):
                    async with gate.slot(HOST):
                        pass

            async with anyio.create_task_group() as tg:
                for _ in range(CONCURRENT_TASKS):
                    tg.start_soon(loop)

        return {
            "ping_per_s": await timed_rate(pairs, pings),
            "pairs_per_s": await timed_rate(pairs, sequential),
            "concurrent_pairs_per_s": await timed_rate(
                pairs // CONCURRENT_TASKS * CONCURRENT_TASKS, concurrent
            ),
        }


def witness_key(job: str) -> str:
    return f"crawlog:{{{job}}}:bench:held"


async def child(url: str, job: str, seconds: float) -> None:
    """One worker process of (d): READY, then on GO run for ``seconds``, print its counts."""
    async with connect(url) as client:
        gate = PolitenessGate(client, job, Politeness(per_host=SHARED_PER_HOST))
        print("READY", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
        pairs, most = 0, 0
        deadline = time.monotonic() + seconds

        async def loop() -> None:
            nonlocal pairs, most
            while time.monotonic() < deadline:
                async with gate.slot(HOST):
                    most = max(most, int(await client.incr(witness_key(job))))
                    await client.decr(witness_key(job))
                pairs += 1

        async with anyio.create_task_group() as tg:
            for _ in range(SHARED_TASKS):
                tg.start_soon(loop)
        print(json.dumps({"pairs": pairs, "max_held": most}), flush=True)


async def sample_slots(client: aioredis.Redis, key: str, stop: anyio.Event) -> int:
    most = 0
    while not stop.is_set():
        most = max(most, int(await client.zcard(key)))
        await anyio.sleep(SAMPLE_EVERY_S)
    return most


async def shared_host(url: str, seconds: float) -> dict[str, float]:
    job = f"bench-shared-{time.time_ns()}"
    command = [sys.executable, __file__, "--child", "--url", url, "--job", job]
    children = [
        subprocess.Popen(
            [*command, "--seconds", str(seconds)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(SHARED_PROCESSES)
    ]
    for process in children:
        assert process.stdin is not None and process.stdout is not None
        assert process.stdout.readline().strip() == "READY"
    sampled = 0
    async with connect(url) as client:
        stop = anyio.Event()

        async def sample() -> None:
            nonlocal sampled
            sampled = await sample_slots(client, JobKeys(job).host_slots(HOST), stop)

        async with anyio.create_task_group() as tg:
            tg.start_soon(sample)
            start = time.perf_counter()
            for process in children:
                assert process.stdin is not None
                process.stdin.write("GO\n")
                process.stdin.flush()
            reports = []
            for process in children:
                out, _ = await anyio.to_thread.run_sync(process.communicate)
                reports.append(json.loads(out.strip().splitlines()[-1]))
            elapsed = time.perf_counter() - start
            stop.set()
    total = sum(r["pairs"] for r in reports)
    return {
        "shared_pairs_per_s": total / elapsed,
        "shared_max_held_witness": max(r["max_held"] for r in reports),
        "shared_max_held_sampled": sampled,
        "shared_min_process_share": min(r["pairs"] for r in reports) / total,
    }


def print_table(figures: dict[str, float]) -> None:
    rows = [
        ("(a) PING, one at a time", f"{figures['ping_per_s']:,.0f} /s"),
        ("(b) acquire+release, one at a time", f"{figures['pairs_per_s']:,.0f} pairs/s"),
        (
            f"(c) acquire+release, {CONCURRENT_TASKS} tasks",
            f"{figures['concurrent_pairs_per_s']:,.0f} pairs/s",
        ),
        (
            f"(d) {SHARED_PROCESSES} processes, per_host={SHARED_PER_HOST}",
            f"{figures['shared_pairs_per_s']:,.0f} pairs/s, max held "
            f"{figures['shared_max_held_witness']:.0f} (witness) / "
            f"{figures['shared_max_held_sampled']:.0f} (sampled)",
        ),
    ]
    for name, value in rows:
        print(f"{name:<40} {value}")


async def run(url: str, pairs: int, seconds: float) -> dict[str, float]:
    figures = await single_client(url, pairs)
    figures.update(await shared_host(url, seconds))
    figures["pairs_vs_half_ping"] = figures["pairs_per_s"] / (figures["ping_per_s"] / 2)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=PAIRS, help="pairs in (a)-(c)")
    parser.add_argument("--seconds", type=float, default=SHARED_SECONDS, help="length of (d)")
    parser.add_argument("--url", help="benchmark this server instead of a private one")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--job", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        anyio.run(child, args.url, args.job, args.seconds)
        return 0
    with tempfile.TemporaryDirectory(prefix="crawlog-bench-") as tmp:
        url = args.url or ensure_server(Path(tmp)).url
        try:
            figures = anyio.run(run, url, args.pairs, args.seconds)
        finally:
            if not args.url:
                stop_server(Path(tmp))
    print_table(figures)
    print(json.dumps({k: round(v, 3) for k, v in figures.items()}))
    most_held = max(figures["shared_max_held_witness"], figures["shared_max_held_sampled"])
    return 0 if most_held <= SHARED_PER_HOST else 1


if __name__ == "__main__":
    sys.exit(main())
