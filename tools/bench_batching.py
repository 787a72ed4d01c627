"""Client CPU a script call costs sent alone and through a `ScriptBatcher`, by concurrency.

    python tools/bench_batching.py [--calls N] [--rounds R] [--url URL]
    python tools/bench_batching.py --layers [--baseline DIR] [--calls N] [--rounds R]

On one private valkey-server (unix socket, as crawlog runs it), C tasks (1, 4, 16: a
worker's concurrency) each take host slots (`HostSlots.acquire`, the script every request
calls) one after the other, N calls in all: once each call sent alone, once through a
running batcher (the calls made while one is in flight go together in the next pipeline).
The two are alternated round by round. Prints, per concurrency, the medians (min-max) of
this process's CPU per call and the calls a round trip; the last line is one JSON object
with the same figures.

``--layers``: where a call alone spends its client CPU, one task calling one after the
other: the worker's hot calls through crawlog's API (a host slot, `HostSlots.acquire`; a
checkpoint, `TaskQueue.checkpoint`; a claim of one task; an enqueue of one), the slot
script through redis-py alone (``Script.__call__``; ``execute_command("EVALSHA", ...)``),
and the floor: the same EVALSHA packed by hiredis on a bare socket, no client library.
The layers are alternated within each round. With ``--baseline DIR`` (a tree of crawlog,
e.g. ``git archive`` of ``main``), each round runs once in a subprocess importing this
tree and once importing DIR, alternated, against one server: medians per tree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import hiredis
import redis.asyncio as aioredis

from eventlog import (
    CheckpointSaved,
    Counts,
    Cursor,
    HostSlots,
    JobKeys,
    ScriptBatcher,
    Task,
    TaskQueue,
    connect,
    ensure_server,
    stop_server,
)
from eventlog._connection import command  # execute_command, typed
from eventlog._scripts import POLITENESS_ACQUIRE  # the slot script, called through redis-py

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


Layer = Callable[[int], Awaitable[object]]


async def _floor(url: str, sha: str, keys: list[str]) -> Layer | None:
    """EVALSHA of the slot script packed by hiredis on a bare unix socket: no client."""
    if not url.startswith("unix://"):
        return None
    sock = await anyio.connect_unix(urlsplit(url).path)
    reader = hiredis.Reader()

    async def call(i: int) -> object:
        args: list[str | int] = ["EVALSHA", sha, len(keys), *keys]
        args += (f"f{i}", 10**9, 0, 60_000, 1_000, "h.test", f"t{i}")
        # hiredis's stub types its argument as a tuple of one.
        await sock.send(hiredis.pack_command(tuple(args)))  # type: ignore[arg-type]
        while (reply := reader.gets()) is False:
            reader.feed(await sock.receive())
        return reply

    return call


async def _layers(client: aioredis.Redis, url: str, tag: str) -> dict[str, Layer]:
    """The calls measured, each taking its call's number."""
    keys = JobKeys(f"bench-layers-{tag}")
    slots = HostSlots(client, keys, "w1")
    queue = TaskQueue(client, keys, "w1")
    await queue.enqueue(
        [Task(task_id="held", url="http://h.test/", site="http://h.test")], actor="b"
    )
    (lease,) = await queue.claim(1)
    script = client.register_script(POLITENESS_ACQUIRE)
    slot_keys = keys.host_slot_keys("h.test", "w1")

    def slot_args(prefix: str, i: int) -> list[str | int]:
        return [f"{prefix}{i}", 10**9, 0, 60_000, 1_000, "h.test", f"t{i}"]

    def task(i: int) -> Task:
        return Task(task_id=f"q{i}", url=f"http://h.test/{i}", site="http://h.test")

    async def take_slot(i: int) -> object:
        return await slots.acquire(
            "h.test", f"s{i}", per_host=10**9, delay_ms=0, ttl_ms=60_000, max_wait_ms=1_000,
            task_id=f"t{i}",
        )  # fmt: skip

    async def checkpoint(i: int) -> object:
        event = CheckpointSaved(
            actor="w1", task_id="held", attempt=1, cursor=Cursor(page=i), counts=Counts(pages=i)
        )
        return await queue.checkpoint(lease, event)

    layers: dict[str, Layer] = {
        "slot": take_slot,
        "checkpoint": checkpoint,
        "enqueue": lambda i: queue.enqueue([task(i)], actor="b"),
        "claim": lambda i: queue.claim(1),
        "redis_py_script": lambda i: script(keys=slot_keys, args=slot_args("r", i)),
        "redis_py_execute_command": lambda i: command(
            client, "EVALSHA", script.sha, len(slot_keys), *slot_keys, *slot_args("e", i)
        ),
    }
    if (floor := await _floor(url, script.sha, slot_keys)) is not None:
        layers["floor_bare_socket"] = floor
    return layers


async def layers_round(url: str, calls: int, tag: str) -> dict[str, float]:
    """Client CPU µs a call of each layer, ``calls`` calls each, layers alternated."""
    async with connect(url) as client:
        layers = await _layers(client, url, tag)
        # The claims take what the enqueues queued: enqueue first, whatever the order.
        names = list(layers)
        order = names if int(tag.rsplit("-", 1)[-1]) % 2 == 0 else names[::-1]
        order.remove("claim")
        order.insert(order.index("enqueue") + 1, "claim")
        figures = {}
        for name in order:
            call = layers[name]
            await call(-1)  # loads the script
            started = time.process_time()
            for i in range(calls):
                await call(i)
            figures[name] = 1e6 * (time.process_time() - started) / calls
        return figures


def compare_trees(url: str, baseline: Path, calls: int, rounds: int) -> dict[str, float]:
    """``layers_round`` alternated between this tree and ``baseline``, one subprocess each."""
    trees = {"this": Path(__file__).resolve().parent.parent, "baseline": baseline.resolve()}
    got: dict[str, dict[str, list[float]]] = {"this": {}, "baseline": {}}
    for r in range(rounds):
        for name in ("this", "baseline") if r % 2 == 0 else ("baseline", "this"):
            out = subprocess.run(
                [sys.executable, __file__, "--layers", "--url", url, "--calls", str(calls),
                 "--rounds", "1", "--tag", f"{name}-{r}"],
                env={**os.environ, "PYTHONPATH": str(trees[name])},
                check=True, capture_output=True, text=True,
            ).stdout  # fmt: skip
            for layer, us in json.loads(out.splitlines()[-1]).items():
                got[name].setdefault(layer, []).append(us)
    figures = {}
    for layer in got["this"]:
        for name in ("this", "baseline"):
            values = got[name][layer]
            figures[f"{layer}_{name}_us"] = statistics.median(values)
            print(
                f"{layer:<26} {name:<8} {statistics.median(values):6.1f} µs a call "
                f"({min(values):.1f}-{max(values):.1f})"
            )
    return figures


def run_layers(url: str, calls: int, rounds: int, tag: str) -> dict[str, float]:
    got: dict[str, list[float]] = {}
    for r in range(rounds):
        for layer, us in anyio.run(layers_round, url, calls, f"{tag}-{r}").items():
            got.setdefault(layer, []).append(us)
    for layer, values in got.items():
        print(
            f"{layer:<26} {statistics.median(values):6.1f} µs a call "
            f"({min(values):.1f}-{max(values):.1f})"
        )
    return {layer: statistics.median(values) for layer, values in got.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=CALLS)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--url", help="benchmark this server instead of a private one")
    parser.add_argument("--layers", action="store_true", help="a call alone, layer by layer")
    parser.add_argument("--baseline", type=Path, help="with --layers: compare with this tree")
    parser.add_argument("--tag", default="0", help=argparse.SUPPRESS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crawlog-bench-") as tmp:
        url = args.url or ensure_server(Path(tmp)).url
        try:
            if args.layers and args.baseline:
                figures = compare_trees(url, args.baseline, args.calls, args.rounds)
            elif args.layers:
                figures = run_layers(url, args.calls, args.rounds, args.tag)
            else:
                figures = anyio.run(run, url, args.calls, args.rounds)
        finally:
            if not args.url:
                stop_server(Path(tmp))
    print(json.dumps({k: round(v, 2) for k, v in figures.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
