"""What ``--durability replica`` costs on the crawl of ``tools/bench_vs_scrapy.py``.

    python tools/bench_durability.py [--pages N] [--workers W] [--concurrency C] [--rounds R]

Starts ``crawlog testsite`` (N pages, default 2,000) and one replica set
(``start_replica_set``: a primary, a replica, three Sentinels), then, alternating in each
round, crawls the site completely with ``crawlog crawl --durability local`` and with
``--durability replica`` (W workers x C fetches, the default spider, no per-host delay, a
fresh job and data directory per crawl), both through the same Sentinel URL, so that the
only difference is the ``WAIT`` after each checkpoint and finish. Which of the two goes
first alternates from round to round. Pages/s is the pages the site served over the
command's wall time.

Prints a table (the median and the spread, min to max, of each mode's rounds); the last
line is one JSON object with ``local_pages_per_s``, ``replica_pages_per_s`` (medians),
``replica_overhead`` (1 - replica / local, from the medians; target <= 0.15) and
``replica_overhead_by_round`` (the same, round by round).
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_vs_scrapy import compile_checkout, served, start_site

from crawler.cli import crawlog_command
from eventlog import start_replica_set, stop_replica_set

DEFAULT_PAGES = 2_000
DEFAULT_WORKERS = 2
DEFAULT_CONCURRENCY = 16
ROUNDS = 5
MODES = ("local", "replica")


def run_crawl(
    url: str, redis_url: str, durability: str, workers: int, concurrency: int, request_log: Path
) -> tuple[int, float]:
    """Pages the site served to one ``crawlog crawl --durability``, and its wall time."""
    before = served(request_log)
    with tempfile.TemporaryDirectory(prefix="crawlog-bench-") as data:
        command = crawlog_command(
            "crawl", url + "/", "--job", f"bench-{time.time_ns()}",
            "--workers", str(workers), "--concurrency", str(concurrency),
            "--per-host", str(workers * concurrency), "--data-dir", data,
            "--durability", durability,
        )  # fmt: skip
        env = {**os.environ, "REDIS_URL": redis_url}
        started = time.monotonic()
        subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        elapsed = time.monotonic() - started
    return served(request_log) - before, elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES)
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    compile_checkout()
    rates: dict[str, list[float]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="crawlog-bench-") as tmp:
        request_log = Path(tmp) / "requests.jsonl"
        site, url = start_site(args.pages, request_log)
        try:
            redis_url = start_replica_set(Path(tmp) / "set").url
            for r in range(args.rounds):
                order = MODES if r % 2 == 0 else MODES[::-1]
                said = []
                for mode in order:
                    pages, seconds = run_crawl(
                        url, redis_url, mode, args.workers, args.concurrency, request_log
                    )
                    rates[mode].append(pages / seconds)
                    said.append(f"{mode} {pages} pages in {seconds:.2f} s")
                print(f"  round {r + 1}: {', '.join(said)}", flush=True)
        finally:
            stop_replica_set(Path(tmp) / "set")
            site.terminate()
            site.wait()
    local, replica = (statistics.median(rates[mode]) for mode in MODES)
    by_round = [1 - b / a for a, b in zip(rates["local"], rates["replica"], strict=True)]
    print(f"\n{'durability':<11} {'pages/s':>9}   spread ({args.workers} x {args.concurrency})")
    for mode in MODES:
        spread = f"{min(rates[mode]):,.0f} .. {max(rates[mode]):,.0f}"
        print(f"{mode:<11} {statistics.median(rates[mode]):>9,.0f}   {spread}")
    overhead = 1 - replica / local
    print(f"replica overhead: {overhead:.1%} of local's pages/s (target <= 15 %)")
    result = {
        "pages": args.pages,
        "rounds": args.rounds,
        "local_pages_per_s": round(local, 3),
        "replica_pages_per_s": round(replica, 3),
        "replica_overhead": round(overhead, 3),
        "replica_overhead_by_round": [round(o, 3) for o in by_round],
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
