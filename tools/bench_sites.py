"""How close a crawl of several sites, each limited by its delay, comes to the sum of their limits.

    python tools/bench_sites.py [--runs N] [--baseline TREE] [--scenarios 1,4,50,mixed]

Test sites (``crawler.testsite``) are served in this process, each on its own port of
127.0.0.1, and ``crawlog crawl`` (a subprocess, its own server and data directory) crawls
them all from their home pages with ``--delay``, so that each site allows at most
``1 / delay`` requests a second. From the sites' own request logs (the time each answer was
written), for each run:

- ``multi_site_efficiency``: the requests all sites served while every one of them still
  had pages to give (from the first request to the moment the first site was done) per
  second, divided by the sum of the sites' limits. 1.0: every site ran at its limit.
- for ``mixed`` (one big site and three small ones): ``small_slowdown``, the longest time a
  small site took (from the crawl's first request to its own last) over the time its own
  limit allows for its requests. 1.0: as fast as its limit lets it.

Scenarios: ``1`` (the reference: one site), ``4`` and ``50`` sites of equal size, and
``mixed``. With ``--baseline TREE`` (another checkout, e.g. main's code) each run of a
scenario is made with both trees in turn (A/B, alternated), so both see the same machine.
Prints a table (median, min and max of each figure per tree) and, as its last line, one
JSON object with the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import NamedTuple

from crawler.testsite import RunningSite, serve_testsite

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_RUNS = 3
WORKERS = 2
CONCURRENCY = 32
"""64 leases in all, as in the report of one site's tasks taking every lease."""
RUN_TIMEOUT_S = 300.0
ROBOTS_PATH = "/robots.txt"


class Scenario(NamedTuple):
    name: str
    pages: tuple[int, ...]
    """Detail pages of each site."""
    delay_s: float
    """``--delay``: every site's limit is one request per this many seconds."""


SCENARIOS = {
    "1": Scenario("1", (150,), 0.05),
    "4": Scenario("4", (40,) * 4, 0.2),
    "50": Scenario("50", (6,) * 50, 2.0),
    "mixed": Scenario("mixed", (150, 15, 15, 15), 0.1),
}


def env_for(tree: Path) -> dict[str, str]:
    """No REDIS_URL (the crawl starts its own server), ``tree``'s code first on the path."""
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env["PYTHONPATH"] = str(tree)
    return env


def site_figures(
    sites: Sequence[RunningSite], delays: Sequence[float]
) -> tuple[float, list[float], float]:
    """(efficiency, each site's time over its limit's time, the crawl's span in s)."""
    times = [[r.time for r in site.requests if r.path != ROBOTS_PATH] for site in sites]
    if any(not t for t in times):
        raise SystemExit("a site served no page: the crawl did not reach every site")
    start = min(t[0] for t in times)
    window_end = min(t[-1] for t in times)
    served = sum(sum(1 for x in t if x <= window_end) for t in times)
    limit = sum(1 / d for d in delays)
    span = window_end - start
    efficiency = served / span / limit if span > 0 else float("nan")
    # A site's own limit lets its n requests go in (n - 1) delays.
    slowdowns = [
        (t[-1] - start) / max((len(t) - 1) * d, d) for t, d in zip(times, delays, strict=True)
    ]
    return efficiency, slowdowns, max(t[-1] for t in times) - start


async def one_run(tree: Path, scenario: Scenario, scratch: Path, n: int) -> dict[str, float]:
    data_dir = scratch / f"run{n}"
    env = env_for(tree)
    async with AsyncExitStack() as stack:
        sites = [
            await stack.enter_async_context(serve_testsite(pages=pages, seed=i))
            for i, pages in enumerate(scenario.pages)
        ]
        seeds = [site.url + "/" for site in sites]
        command = [
            sys.executable, "-m", "crawler.cli", "crawl", *seeds,
            "--job", f"sites{n}", "--data-dir", str(data_dir),
            "--workers", str(WORKERS), "--concurrency", str(CONCURRENCY),
            "--delay", str(scenario.delay_s), "--per-host", "2", "--fail-on", "never",
        ]  # fmt: skip
        started = time.perf_counter()
        try:
            # From the scratch directory: ``python -m`` puts the working directory first
            # on the path, so from a checkout it would run that checkout's code.
            proc = await asyncio.create_subprocess_exec(
                *command,
                env=env,
                cwd=scratch,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            _, err = await asyncio.wait_for(proc.communicate(), RUN_TIMEOUT_S)
            if proc.returncode != 0:
                raise SystemExit(f"crawl failed (exit {proc.returncode}): {err.decode()[-2000:]}")
        finally:
            stop = [sys.executable, "-m", "crawler.cli", "server", "stop"]
            subprocess.run(
                [*stop, "--data-dir", str(data_dir)],
                env=env,
                cwd=scratch,
                capture_output=True,
                timeout=RUN_TIMEOUT_S,
                check=False,
            )
            shutil.rmtree(data_dir, ignore_errors=True)
        wall = time.perf_counter() - started
        efficiency, slowdowns, span = site_figures(sites, [scenario.delay_s] * len(sites))
    run = {"efficiency": efficiency, "span_s": span, "wall_s": wall}
    if scenario.name == "mixed":
        run["small_slowdown"] = max(slowdowns[1:])
    return run


def print_table(results: dict[str, dict[str, list[dict[str, float]]]]) -> None:
    print(f"{'sites':<6} {'code':<9} {'figure':<15} {'median':>7} {'min':>7} {'max':>7}  runs")
    for name, by_code in results.items():
        for code, runs in by_code.items():
            for figure in runs[0]:
                values = [run[figure] for run in runs]
                shown = " ".join(f"{v:.2f}" for v in values)
                print(
                    f"{name:<6} {code:<9} {figure:<15} {statistics.median(values):>7.2f} "
                    f"{min(values):>7.2f} {max(values):>7.2f}  {shown}"
                )


async def main_async(args: argparse.Namespace) -> dict[str, dict[str, list[dict[str, float]]]]:
    trees = {"this": ROOT}
    if args.baseline is not None:
        trees = {"baseline": args.baseline.resolve(), "this": ROOT}
    names = args.scenarios.split(",")
    results: dict[str, dict[str, list[dict[str, float]]]] = {
        name: {code: [] for code in trees} for name in names
    }
    with tempfile.TemporaryDirectory(prefix="crawlog-sites-") as scratch:
        n = 0
        for name in names:
            for _ in range(args.runs):
                for code, tree in trees.items():
                    n += 1
                    run = await one_run(tree, SCENARIOS[name], Path(scratch), n)
                    results[name][code].append(run)
                    shown = ", ".join(f"{k} {v:.2f}" for k, v in run.items())
                    print(f"{name} sites, {code}: {shown}", file=sys.stderr)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--baseline", type=Path, default=None, help="other code to alternate with")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    args = parser.parse_args()
    results = asyncio.run(main_async(args))
    print_table(results)
    figures: dict[str, object] = {"runs": args.runs, "workers": WORKERS, "concurrency": CONCURRENCY}
    for code in next(iter(results.values())):
        prefix = "" if code == "this" else f"{code}_"
        efficiency = {
            name: round(statistics.median(r["efficiency"] for r in by_code[code]), 3)
            for name, by_code in results.items()
        }
        figures[f"{prefix}multi_site_efficiency"] = efficiency
        figures[f"{prefix}multi_site_efficiency_spread"] = {
            name: [round(f(r["efficiency"] for r in by_code[code]), 3) for f in (min, max)]
            for name, by_code in results.items()
        }
        if "mixed" in results:
            slow = [r["small_slowdown"] for r in results["mixed"][code]]
            figures[f"{prefix}small_site_slowdown"] = round(statistics.median(slow), 3)
            figures[f"{prefix}small_site_slowdown_spread"] = [
                round(min(slow), 3),
                round(max(slow), 3),
            ]
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
