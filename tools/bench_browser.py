"""Pages per second of a ``--browser`` crawl of the test site's scripted layout.

    python tools/bench_browser.py [--pages N] [--workers W]

Starts ``crawlog testsite --layout scripted`` (a shop whose links scripts write) as a
process of its own, then crawls it with ``crawlog crawl --browser`` in a fresh data
directory (the crawl starts its own server, each worker its own Chromium). Prints a table
and, last, one JSON line: pages crawled, the crawl's wall time (start-up included: server,
workers, Chromium) and pages per second over it, and how many Chromium processes the
crawl's data directory still marks once it has ended (0 expected).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crawler._browser import BROWSERS_DIR, marked_processes

ROOT = Path(__file__).resolve().parents[1]
RUN_TIMEOUT_S = 600
FINISHED = re.compile(r"; ([\d,]+) pages")


def env() -> dict[str, str]:
    """No REDIS_URL (the crawl starts its own server), this checkout first on the path."""
    environment = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    environment["PYTHONPATH"] = str(ROOT)
    return environment


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200, help="items of the shop")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    site_command = [
        sys.executable, "-m", "crawler.cli", "testsite",
        "--layout", "scripted", "--pages", str(args.pages),
    ]  # fmt: skip
    site = subprocess.Popen(site_command, stdout=subprocess.PIPE, text=True, env=env())
    try:
        assert site.stdout is not None
        line = site.stdout.readline()
        if not line.startswith("serving "):
            raise SystemExit(f"the test site did not start: {line!r}")
        url = line.split()[1]
        with tempfile.TemporaryDirectory(prefix="bench-browser-") as scratch:
            data_dir = Path(scratch) / "data"
            crawl = [
                sys.executable, "-m", "crawler.cli", "crawl", url + "/", "--browser",
                "--job", "bench", "--data-dir", str(data_dir), "--workers", str(args.workers),
            ]  # fmt: skip
            started = time.perf_counter()
            done = subprocess.run(
                crawl, env=env(), cwd=scratch, capture_output=True, text=True,
                timeout=RUN_TIMEOUT_S, check=False,
            )  # fmt: skip
            wall = time.perf_counter() - started
            left = len(marked_processes(data_dir / BROWSERS_DIR))
            stop = [
                sys.executable,
                "-m",
                "crawler.cli",
                "server",
                "stop",
                "--data-dir",
                str(data_dir),
            ]
            subprocess.run(stop, env=env(), capture_output=True, timeout=60, check=False)
        if done.returncode != 0:
            raise SystemExit(f"crawl failed (exit {done.returncode}): {done.stderr.strip()}")
        found = FINISHED.search(done.stdout + done.stderr)
        pages = int(found.group(1).replace(",", "")) if found else 0
    finally:
        site.terminate()
        site.wait()
    rate = pages / wall if wall else 0.0
    print(f"{'pages':>8} {'workers':>8} {'wall s':>8} {'pages/s':>8} {'orphans':>8}")
    print(f"{pages:>8} {args.workers:>8} {wall:>8.1f} {rate:>8.2f} {left:>8}")
    figures = {
        "pages": pages,
        "workers": args.workers,
        "wall_s": round(wall, 2),
        "browser_pages_per_s": round(rate, 2),
        "orphans_after_crawl": left,
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
