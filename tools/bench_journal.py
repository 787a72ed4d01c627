"""What the worker's journal costs per fenced write: checkpoints (a page and its
checkpoint, one settle call each) against a real valkey-server, without a journal, with
``--fsync never`` and with ``--fsync always``, in alternating rounds; medians.

    python tools/bench_journal.py [--writes 2000] [--rounds 5]

Prints one JSON line: per mode the median seconds per round and microseconds per write,
and each journalled mode's overhead over none.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eventlog import (
    CheckpointSaved,
    Cursor,
    Journal,
    PageFetched,
    Task,
    TaskQueue,
    connect,
    ensure_server,
    stop_server,
)

MODES = ("none", "never", "always")


async def one_round(url: str, mode: str, writes: int, directory: Path) -> float:
    async with connect(url) as client:
        job = f"bench-journal-{uuid.uuid4().hex[:8]}"
        journal = None if mode == "none" else Journal(directory / job, fsync=mode)  # type: ignore[arg-type]
        queue = TaskQueue(client, job, "w1", journal=journal)
        await queue.enqueue(
            [Task(task_id="t1", url="http://a.test/", site="http://a.test")], actor="seed"
        )
        [lease] = await queue.claim(1)
        started = time.perf_counter()
        for page in range(1, writes + 1):
            fetched = PageFetched(
                actor="w1", task_id="t1", attempt=1, url="http://a.test/", status=200, page=page
            )
            saved = CheckpointSaved(actor="w1", task_id="t1", attempt=1, cursor=Cursor(page=page))
            await queue.checkpoint(lease, saved, before=[fetched])
        elapsed = time.perf_counter() - started
        for key in await client.keys(f"*{job}*"):
            await client.delete(key)
        if journal is not None:
            journal.close()
        return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = ensure_server(Path(tmp) / "server").url
        times: dict[str, list[float]] = {mode: [] for mode in MODES}
        try:
            for _ in range(options.rounds):
                for mode in MODES:  # alternating: the machine's drift hits every mode alike
                    times[mode].append(await one_round(url, mode, options.writes, Path(tmp)))
        finally:
            stop_server(Path(tmp) / "server")
    median = {mode: statistics.median(values) for mode, values in times.items()}
    print(
        json.dumps(
            {
                "writes": options.writes,
                "rounds": options.rounds,
                "median_s": median,
                "us_per_write": {m: round(v / options.writes * 1e6, 1) for m, v in median.items()},
                "journal_overhead": {
                    m: round(median[m] / median["none"] - 1, 3) for m in ("never", "always")
                },
            }
        )
    )


if __name__ == "__main__":
    anyio.run(main)
