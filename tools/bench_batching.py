"""Client CPU a script call costs sent alone and through a `ScriptBatcher`, by concurrency.

    python tools/bench_batching.py [--calls N] [--rounds R] [--url URL]

On one private valkey-server (unix socket, as crawlog runs it), C tasks (1, 4, 16: a
worker's concurrency) each take host slots (`HostSlots.acquire`, the script every request
calls) one after the other, N calls in all: once each call sent alone, once through a
running batcher (the calls made while one is in flight go together in the next pipeline).
The two are alternated round by round. Prints, per concurrency, the medians (min-max) of
this process's CPU per call and the calls a round trip; the last line is one JSON object
with the same figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import redis.asyncio as aioredis

from eventlog import HostSlots, JobKeys, ScriptBatcher, connect, ensure_server, stop_server

CALLS = 4000
ROUNDS = 5
CONCURRENCIES = (1, 4, 16)


async def one_round(
    client: aioredis.Redis, batched: bool, tasks: int, calls: int, tag: str
) -> tuple[float, float]:
    """CPU µs a call, and calls a round trip, of ``calls`` slot takes by ``tasks`` tasks."""
    batcher = ScriptBatcher(client)
    slots = HostSlots(client, JobKeys("bench-batching"), "w1", batcher=batcher)
    each = calls // tasks

    async def taker(i: int) -> None:
        for j in range(each):
            await slots.acquire(
                f"host{i}.test", f"{tag}-{i}-{j}", per_host=10**9, delay_ms=0,
                ttl_ms=60_000, max_wait_ms=1_000, task_id=f"t{i}-{j}",
            )  # fmt: skip

    started = time.process_time()
    async with AsyncExitStack() as stack:
        if batched:
            await stack.enter_async_context(batcher.running())
        async with anyio.create_task_group() as takers:
            for i in range(tasks):
                takers.start_soon(taker, i)
    cpu = time.process_time() - started
    trips = batcher.batches + batcher.alone if batched else each * tasks
    return 1e6 * cpu / (each * tasks), each * tasks / trips


async def run(url: str, calls: int, rounds: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    async with connect(url) as client:
        for tasks in CONCURRENCIES:
            cpu: dict[bool, list[float]] = {False: [], True: []}
            per_trip: list[float] = []
            for r in range(rounds):
                for batched in (False, True) if r % 2 == 0 else (True, False):
                    us, size = await one_round(
                        client, batched, tasks, calls, f"{r}{batched}{tasks}"
                    )
                    cpu[batched].append(us)
                    if batched:
                        per_trip.append(size)
            for batched, name in ((False, "alone"), (True, "batched")):
                values = cpu[batched]
                figures[f"c{tasks}_{name}_us_per_call"] = statistics.median(values)
                print(
                    f"{tasks:>3} tasks, {name:<8} {statistics.median(values):6.0f} µs a call "
                    f"({min(values):.0f}-{max(values):.0f})"
                )
            figures[f"c{tasks}_calls_per_round_trip"] = statistics.median(per_trip)
            print(
                f"{tasks:>3} tasks, batched: {statistics.median(per_trip):.1f} calls a round trip"
            )
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=CALLS)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--url", help="benchmark this server instead of a private one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crawlog-bench-") as tmp:
        url = args.url or ensure_server(Path(tmp)).url
        try:
            figures = anyio.run(run, url, args.calls, args.rounds)
        finally:
            if not args.url:
                stop_server(Path(tmp))
    print(json.dumps({k: round(v, 2) for k, v in figures.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
