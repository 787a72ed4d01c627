"""Benchmark the memory of a job's seen fingerprints: bytes per URL in Redis.

    python tools/bench_dedup.py [--quick] [--urls N] [--rounds R]

On one private valkey-server as crawlog starts it (``ensure_server``), N URL fingerprints
(default 1,000,000; ``--quick`` 100,000) are enqueued through the real enqueue script
(`TaskQueue.enqueue`, batches of 1,000, no events so that only the dedup is measured) and
the job's seen keys are weighed with ``MEMORY USAGE`` (every bucket and the count). Beside
it, the same fingerprints SADDed to one plain set, the layout crawlog used before the
buckets: the peer on the same server. Rounds alternate the two; figures are medians, with
the spread. Prints a table, then as its last line one JSON object with at least
``seen_bytes_per_url_1m`` (or ``seen_bytes_per_url`` with the count for another N).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import redis.asyncio as aioredis

from eventlog import JobKeys, Task, TaskQueue, connect, ensure_server, stop_server
from eventlog._keys import SEEN_BUCKETS

BATCH = 1000
FULL_URLS = 1_000_000
QUICK_URLS = 100_000
ROUNDS = 3
TARGET_BYTES_PER_URL = 16


def fingerprints(n: int, salt: int) -> list[str]:
    """Distinct URL fingerprints, as crawlog makes them (blake2b of the canonical URL)."""
    return [
        hashlib.blake2b(f"https://site-{i % 997}.test/page/{i}?r={salt}".encode(), digest_size=8)
        .digest()
        .hex()
        for i in range(n)
    ]


async def memory_of(client: aioredis.Redis, keys: list[str]) -> int:
    total = 0
    for start in range(0, len(keys), BATCH):
        async with client.pipeline(transaction=False) as pipe:
            for key in keys[start : start + BATCH]:
                pipe.memory_usage(key, samples=0)
            total += sum(size or 0 for size in await pipe.execute())
    return total


async def bucketed(client: aioredis.Redis, fps: list[str], job: str) -> tuple[float, float]:
    """(bytes per URL, URLs enqueued per second) of the bucketed layout."""
    queue = TaskQueue(client, job, "bench", record_events=False)
    started = time.perf_counter()
    for start in range(0, len(fps), BATCH):
        chunk = fps[start : start + BATCH]
        tasks = [Task(task_id=fp, url="https://s.test/", site="https://s.test") for fp in chunk]
        await queue.enqueue(tasks, actor="bench")
    rate = len(fps) / (time.perf_counter() - started)
    # Only the dedup is weighed: the lane entries are what a crawl consumes and trims.
    await client.delete(*JobKeys(job).lanes)
    keys = JobKeys(job)
    weighed = [keys.seen_bucket(b) for b in range(SEEN_BUCKETS)] + [keys.seen_count]
    size = await memory_of(client, weighed)
    await client.delete(*weighed)
    return size / len(fps), rate


async def plain_set(client: aioredis.Redis, fps: list[str], job: str) -> tuple[float, float]:
    """(bytes per URL, URLs added per second) of one plain set, pipelined SADDs."""
    key = JobKeys(job).seen
    started = time.perf_counter()
    for start in range(0, len(fps), BATCH):
        await client.sadd(key, *fps[start : start + BATCH])
    rate = len(fps) / (time.perf_counter() - started)
    size = await memory_of(client, [key])
    await client.delete(key)
    return size / len(fps), rate


async def run(url: str, urls: int, rounds: int) -> dict[str, object]:
    results: dict[str, list[tuple[float, float]]] = {"bucketed": [], "plain set": []}
    async with connect(url) as client:
        for round_ in range(rounds):
            fps = fingerprints(urls, round_)
            order = [("bucketed", bucketed), ("plain set", plain_set)]
            for name, measure in order if round_ % 2 == 0 else order[::-1]:
                results[name].append(await measure(client, fps, f"bench-dedup-{round_}"))
                print(f"round {round_ + 1}: {name} done", file=sys.stderr)
    print(f"{urls:,} URLs, {rounds} rounds (medians; spread min-max)")
    print(f"{'layout':<12} {'bytes/URL':>10} {'spread':>14} {'URLs/s':>10}")
    summary: dict[str, object] = {"urls": urls, "rounds": rounds}
    for name, runs in results.items():
        sizes = [size for size, _ in runs]
        rates = [rate for _, rate in runs]
        size = statistics.median(sizes)
        spread = f"{min(sizes):.1f}-{max(sizes):.1f}"
        print(f"{name:<12} {size:>10.1f} {spread:>14} {statistics.median(rates):>10,.0f}")
        summary[name.replace(" ", "_") + "_bytes_per_url"] = round(size, 2)
    seen = summary["bucketed_bytes_per_url"]
    summary["seen_bytes_per_url" + ("_1m" if urls == FULL_URLS else "")] = seen
    summary["target_bytes_per_url"] = TARGET_BYTES_PER_URL
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_URLS:,} URLs")
    parser.add_argument("--urls", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    urls = args.urls or (QUICK_URLS if args.quick else FULL_URLS)
    with tempfile.TemporaryDirectory(prefix="crawlog-bench-") as tmp:
        url = ensure_server(Path(tmp)).url
        try:
            summary = anyio.run(run, url, urls, args.rounds)
        finally:
            stop_server(Path(tmp))
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
