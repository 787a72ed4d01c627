"""What the worker's journal costs.

    python tools/bench_journal.py [--writes 2000] [--rounds 5]
    python tools/bench_journal.py --crawl [--baseline PATH] [--rounds 6]

Per fenced write: checkpoints (a page and its checkpoint, one settle call each, one after
the other: no group commit to share) against a real valkey-server, without a journal,
with ``--fsync never`` and with ``--fsync always``, in alternating rounds. Prints one JSON
line: per mode the median seconds per round and microseconds per write, and each
journalled mode's overhead over none.

``--crawl``: ``crawlog crawl`` of tools/bench_vs_scrapy.py's site (2,000 pages, 2 workers
x 8), its workers' journals with ``CRAWLOG_JOURNAL_FSYNC=always`` and ``never``, and, with
``--baseline PATH``, the same crawl by the crawlog checkout at PATH (one without the
journal, e.g. the commit before it); the arms in a rotating order each round. Prints one
JSON line: median pages/s per arm, and each journalled arm's cost over the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from eventlog import (
    JOURNAL_FSYNC_ENV,
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
CRAWL_PAGES = 2000


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


def crawl_arms(rounds: int, baseline: str | None) -> dict[str, object]:
    """The ``--crawl`` comparison (run in new interpreters: PYTHONPATH picks the code)."""
    from bench_vs_scrapy import run_crawlog, start_site  # tools/, beside this file

    here = str(Path(__file__).resolve().parent.parent)
    arms = [("always", here, "always"), ("never", here, "never")]
    if baseline is not None:
        arms.insert(0, ("baseline", baseline, "always"))
    rates: dict[str, list[float]] = {name: [] for name, _, _ in arms}
    with tempfile.TemporaryDirectory() as tmp:
        requests = Path(tmp) / "requests.log"
        os.environ["PYTHONPATH"] = here
        site, url = start_site(CRAWL_PAGES, requests)
        redis_url = ensure_server(Path(tmp) / "server").url
        try:
            for r in range(rounds):
                for name, code, fsync in arms[r % len(arms) :] + arms[: r % len(arms)]:
                    os.environ["PYTHONPATH"] = code
                    os.environ[JOURNAL_FSYNC_ENV] = fsync
                    pages, elapsed = run_crawlog(url, redis_url, 2, 8, requests, events=True)
                    rates[name].append(pages / elapsed)
        finally:
            stop_server(Path(tmp) / "server")
            site.terminate()
            site.wait()
    median = {name: statistics.median(values) for name, values in rates.items()}
    result: dict[str, object] = {
        "pages_per_s": {name: round(value, 1) for name, value in median.items()},
        "rates": {name: [round(v, 1) for v in values] for name, values in rates.items()},
    }
    if baseline is not None:
        result["journal_cost"] = {
            name: round(1 - median[name] / median["baseline"], 3) for name in ("always", "never")
        }
    return result


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--crawl", action="store_true")
    parser.add_argument("--baseline", default=None, metavar="PATH")
    options = parser.parse_args()
    if options.crawl:
        print(json.dumps(crawl_arms(options.rounds, options.baseline)))
        return
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
