"""How long a 1-page crawl takes from the command's start: ``crawlog crawl URL --depth 0``.

    python tools/bench_tiny_crawl.py [--runs N] [--baseline DIR] [--workers N]

Each run is the whole command under ``/usr/bin/time``, against the test site (started
once, as ``crawlog testsite``), with a fresh ``--data-dir``: so it pays what a first crawl
pays, the embedded server's start included (the server is stopped after each run, outside
the measure). Columns per run: wall seconds, CPU seconds (user + system, of the command
and every process it waited for: its workers and its projector; the server is a daemon,
not counted), and the peak RSS of the largest of them.

With ``--baseline DIR`` (a checkout of other code, e.g. ``git worktree add --detach DIR
main``), the runs alternate between DIR and this checkout, so that a busy machine slows
both alike. Each checkout's bytecode is written first (``compileall``), so neither run
pays for compiling its modules. Prints a table (median, min and max per column) and, as
its last line, one JSON object: ``tiny_crawl_s`` (median wall, this checkout) and the
rest. Target: <= 0.7 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RUNS = 5
SITE_PAGES = 10
TIME = "/usr/bin/time"
TIME_FORMAT = "%e %U %S %M"
RUN_TIMEOUT_S = 120.0
TARGET_S = 0.7
COLUMNS = ("wall_s", "cpu_s", "max_rss_mb")
PACKAGES = ("crawler", "eventlog", "projector")


def env_for(tree: Path) -> dict[str, str]:
    """No REDIS_URL (the crawl starts its own server), ``tree``'s code first on the path."""
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env["PYTHONPATH"] = str(tree)
    return env


def compile_tree(tree: Path) -> None:
    """Write ``tree``'s bytecode before any run: with ``PYTHONDONTWRITEBYTECODE`` set (as
    in some shells and CI), a checkout nobody had imported from compiled every module in
    every run, and a baseline worktree made for the comparison paid that where this one
    did not."""
    command = [sys.executable, "-m", "compileall", "-q", *PACKAGES]
    env = {k: v for k, v in env_for(tree).items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(command, cwd=tree, env=env, capture_output=True, check=True)


def start_site() -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "crawler.cli", "testsite", "--pages", str(SITE_PAGES)]
    site = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env_for(ROOT))
    assert site.stdout is not None
    line = site.stdout.readline()  # "serving http://127.0.0.1:PORT (N pages)"
    if not line.startswith("serving "):
        site.kill()
        raise SystemExit(f"the test site did not start: {line!r}")
    return site, line.split()[1]


def one_run(tree: Path, url: str, scratch: Path, n: int, workers: int | None) -> dict[str, float]:
    data_dir = scratch / f"run{n}"
    times = scratch / f"time{n}.txt"
    command = [
        TIME, "-f", TIME_FORMAT, "-o", str(times),
        sys.executable, "-m", "crawler.cli", "crawl", url + "/", "--depth", "0",
        "--job", "tiny", "--data-dir", str(data_dir),
        *(("--workers", str(workers)) if workers is not None else ()),
    ]  # fmt: skip
    env = env_for(tree)
    try:
        # From the scratch directory: ``python -m`` puts the working directory first on the
        # path, so run from a checkout it ran that checkout's code, whatever PYTHONPATH said
        # (the baseline ran this checkout's code when the tool was run from here).
        done = subprocess.run(
            command,
            env=env,
            cwd=scratch,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"crawl failed (exit {done.returncode}): {done.stderr.strip()}")
        wall, user, system, rss_kb = times.read_text().split()[-4:]
    finally:
        stop = [sys.executable, "-m", "crawler.cli", "server", "stop", "--data-dir", str(data_dir)]
        subprocess.run(
            stop, env=env, cwd=scratch, capture_output=True, timeout=RUN_TIMEOUT_S, check=False
        )
        shutil.rmtree(data_dir, ignore_errors=True)
    return {
        "wall_s": float(wall),
        "cpu_s": float(user) + float(system),
        "max_rss_mb": int(rss_kb) / 1024,
    }


def print_table(results: dict[str, list[dict[str, float]]]) -> None:
    print(f"{'code':<10} {'column':<12} {'median':>8} {'min':>8} {'max':>8}  runs")
    for code, runs in results.items():
        for column in COLUMNS:
            values = [run[column] for run in runs]
            shown = " ".join(f"{v:.2f}" for v in values)
            print(
                f"{code:<10} {column:<12} {statistics.median(values):>8.2f} "
                f"{min(values):>8.2f} {max(values):>8.2f}  {shown}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--baseline", type=Path, default=None, help="other code to alternate with")
    parser.add_argument("--workers", type=int, default=None, help="--workers of the crawl")
    args = parser.parse_args()
    trees = {"this": ROOT}
    if args.baseline is not None:
        trees = {"baseline": args.baseline.resolve(), "this": ROOT}
    results: dict[str, list[dict[str, float]]] = {code: [] for code in trees}
    for tree in trees.values():
        compile_tree(tree)
    site, url = start_site()
    try:
        with tempfile.TemporaryDirectory(prefix="crawlog-tiny-") as scratch:
            for n in range(args.runs):
                for code, tree in trees.items():
                    run = one_run(tree, url, Path(scratch), n, args.workers)
                    results[code].append(run)
                    print(f"run {n + 1} {code}: {run['wall_s']:.2f} s wall, "
                          f"{run['cpu_s']:.2f} s CPU", file=sys.stderr)  # fmt: skip
    finally:
        site.terminate()
        site.wait(timeout=RUN_TIMEOUT_S)
    print_table(results)
    walls = [run["wall_s"] for run in results["this"]]
    figures: dict[str, float | int] = {
        "tiny_crawl_s": round(statistics.median(walls), 3),
        "tiny_crawl_min_s": round(min(walls), 3),
        "tiny_crawl_max_s": round(max(walls), 3),
        "tiny_crawl_cpu_s": round(statistics.median(r["cpu_s"] for r in results["this"]), 3),
        "target_s": TARGET_S,
        "runs": args.runs,
    }
    if "baseline" in results:
        base = [run["wall_s"] for run in results["baseline"]]
        figures["baseline_tiny_crawl_s"] = round(statistics.median(base), 3)
        cpu = statistics.median(r["cpu_s"] for r in results["baseline"])
        figures["baseline_tiny_crawl_cpu_s"] = round(cpu, 3)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
