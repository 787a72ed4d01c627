"""CPU of one crawl by process, this tree against another, pairs alternated.

    python tools/bench_crawl_cpu_ab.py --baseline DIR [--pairs 6] [--layout docs]

A change that saves a few µs a store call is ~5 % of a worker's CPU a page: less than
the whole command's CPU moves between rounds on a shared machine. This measures the
parts apart: one test site (``crawlog testsite``, 1,200 pages), then pairs of crawls (2
workers x 16, each a fresh ``--data-dir`` and its own server), one with this tree's code
and one with DIR's, their order alternated pair by pair. Each crawl's processes are
sampled from /proc while it runs (`ProcessSampler`, beside both), its server's CPU read
from /proc before it is stopped. Prints each crawl, then the medians (min-max) per tree
of the workers' CPU, every process's with the server's, and the wall, and in how many
pairs this tree's was lower; the last line is one JSON object with the same figures.
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

from bench_tiny_crawl import compile_tree
from bench_vs_scrapy import ProcessSampler, process_cpu, start_site

ROOT = Path(__file__).resolve().parent.parent
PAIRS = 6
PAGES = 1200
WORKERS = 2
CONCURRENCY = 16
FIGURES = ("workers_s", "all_s", "server_s", "wall_s")


def crawl(tree: Path, url: str, scratch: Path, site: int) -> dict[str, float]:
    """One crawl of ``url`` with ``tree``'s code: its figures (see `FIGURES`); ``site``:
    the test site's pid, not sampled."""
    data = Path(tempfile.mkdtemp(prefix="crawl-", dir=scratch))
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env["PYTHONPATH"] = str(tree)
    command = [
        sys.executable, "-m", "crawler.cli", "crawl", url, "--job", "bench",
        "--workers", str(WORKERS), "--concurrency", str(CONCURRENCY),
        "--per-host", str(WORKERS * CONCURRENCY), "--data-dir", str(data), "--max-pages", "0",
    ]  # fmt: skip
    started = time.monotonic()
    with ProcessSampler({site}) as sampler:
        subprocess.run(command, env=env, cwd=data, capture_output=True, check=True)
    wall = time.monotonic() - started
    server = process_cpu(int((data / "valkey.pid").read_text()))
    stop = [sys.executable, "-m", "crawler.cli", "server", "stop", "--data-dir", str(data)]
    subprocess.run(stop, env=env, capture_output=True, check=False)
    by_name = sampler.by_name()
    workers = sum(cpu for name, cpu in by_name.items() if name.startswith("crawlog-w"))
    return {
        "workers_s": workers,
        "all_s": sum(by_name.values()) + server,
        "server_s": server,
        "wall_s": wall,
    }


def summary(runs: dict[str, list[dict[str, float]]]) -> dict[str, float]:
    """Per tree and figure the median, printed with the spread and the pairs won."""
    figures: dict[str, float] = {}
    for figure in FIGURES:
        for tree, crawls in runs.items():
            values = [c[figure] for c in crawls]
            figures[f"{tree}_{figure}"] = statistics.median(values)
            print(
                f"{figure:<10} {tree:<8} {statistics.median(values):6.2f} "
                f"({min(values):.2f}-{max(values):.2f})"
            )
        pairs = zip(runs["this"], runs["baseline"], strict=True)
        lower = sum(a[figure] < b[figure] for a, b in pairs)
        figures[f"this_lower_{figure}"] = lower
        print(f"{figure:<10} this lower in {lower} of {len(runs['this'])} pairs")
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--pairs", type=int, default=PAIRS)
    parser.add_argument("--layout", default="docs")
    args = parser.parse_args()
    trees = {"this": ROOT, "baseline": args.baseline.resolve()}
    for tree in trees.values():
        compile_tree(tree)
    runs: dict[str, list[dict[str, float]]] = {"this": [], "baseline": []}
    with tempfile.TemporaryDirectory(prefix="crawlog-bench-") as tmp:
        scratch = Path(tmp)
        site, url = start_site(PAGES, scratch / "requests.jsonl", args.layout)
        try:
            for pair in range(args.pairs):
                for name in ("this", "baseline") if pair % 2 == 0 else ("baseline", "this"):
                    got = crawl(trees[name], url + "/", scratch, site.pid)
                    runs[name].append(got)
                    print(name, {k: round(v, 2) for k, v in got.items()}, flush=True)
        finally:
            site.kill()
            site.wait()
    figures = summary(runs)
    print(json.dumps({k: round(v, 3) for k, v in figures.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
