"""Time ``crawlog report --job J --json`` of two crawlog executables on one built job,
alternated run by run (the machine is noisy): medians, spread and the load average.

    python tools/bench_report_ab.py --data-dir /work/reportagg-1m --job scale-1000000 \\
        --base /work/base/.venv/bin/crawlog --runs 5

Prints a table, then a JSON object on the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def timed(exe: str, data_dir: str, job: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [exe, "report", "--job", job, "--data-dir", data_dir, "--json"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--job", required=True)
    parser.add_argument("--base", required=True, help="the baseline's crawlog")
    parser.add_argument(
        "--crawlog", default=str(Path(sys.executable).with_name("crawlog")), help="this tree's"
    )
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"this": [], "base": []}
    loads = [os.getloadavg()[0]]
    for _ in range(args.runs):
        times["this"].append(timed(args.crawlog, args.data_dir, args.job))
        times["base"].append(timed(args.base, args.data_dir, args.job))
        loads.append(os.getloadavg()[0])
    figures = {
        name: {
            "median_s": round(statistics.median(values), 3),
            "min_s": round(min(values), 3),
            "max_s": round(max(values), 3),
        }
        for name, values in times.items()
    }
    print(f"{'':6} {'median s':>9} {'min s':>7} {'max s':>7}")
    for name, f in figures.items():
        print(f"{name:6} {f['median_s']:9.3f} {f['min_s']:7.3f} {f['max_s']:7.3f}")
    print(f"load (1 min) {min(loads):.2f}-{max(loads):.2f}")
    print(
        json.dumps(
            {"job": args.job, "runs": args.runs, "load": [min(loads), max(loads)], **figures}
        )
    )


if __name__ == "__main__":
    main()
