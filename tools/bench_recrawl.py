"""What a recrawl costs against the first crawl of the same site (``crawlog recrawl``).

    python tools/bench_recrawl.py [--pages 2000] [--runs 3] [--workers 2] [--baseline DIR]

Each run starts the test site afresh (``crawlog testsite --request-log``), crawls it with
a fresh ``--data-dir`` (``crawlog crawl``), recrawls it unchanged (``crawlog recrawl``),
then edits 5 % of its pages, deletes some and links new ones (``/_admin/mutate``) and
recrawls it again. Each command is measured whole under ``/usr/bin/time``: wall and CPU
seconds (of the command and the processes it waited for: workers, projector; not the
server's nor the site's). On a shared machine the CPU ratio (``recrawl_cpu_vs_crawl``) is the
steadier figure: the wall times move with the load. Bytes are
the body bytes the site sent for each command (its request log). The changed run is
checked: ``crawlog changes`` lists exactly the pages edited, deleted and added, no page
was sent in full that did not change, and ``crawlog changes --items`` counts no item twice.

Between the crawl and the recrawl, the raw limit (``tools/raw_revisit.py``): the same
pages asked for once more with their validators by bare aiohttp in as many processes as
workers, no queue, log or lease, timed whole too (``raw_s``). Its ratio to the crawl
(``raw_revisit_vs_crawl``) is what no recrawl of the site can go below on this machine.

With ``--baseline DIR`` (another checkout), runs alternate between DIR and this one.
Prints a table (median, min, max per column) and, as its last line, one JSON object:
``recrawl_vs_crawl`` (the medians' ratio of an unchanged recrawl's wall time to the first
crawl's; target <= 0.4), ``recrawl_bytes_share`` (target <= 0.05) and the rest.
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
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from crawler.testsite import MUTATE_PATH, read_request_log  # noqa: E402

TIME = "/usr/bin/time"
TIME_FORMAT = "%e %U %S"
TIMEOUT_S = 900.0
SHARE_CHANGED = 0.05
TARGET_RATIO = 0.4
TARGET_BYTES = 0.05
COLUMNS = ("crawl_s", "recrawl_s", "changed_recrawl_s", "ratio", "bytes_share", "crawl_cpu_s",
           "recrawl_cpu_s", "cpu_ratio", "raw_s", "raw_cpu_s", "raw_ratio")  # fmt: skip


def env_for(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env["PYTHONPATH"] = str(tree)
    return env


def crawlog(tree: Path, scratch: Path, *args: str, timed: bool = False) -> tuple[str, float, float]:
    """Run ``crawlog ARGS`` from ``tree``: (stdout, wall s, CPU s; 0 when not ``timed``)."""
    times = scratch / "time.txt"
    command = [sys.executable, "-m", "crawler.cli", *args]
    if timed:
        command = [TIME, "-f", TIME_FORMAT, "-o", str(times), *command]
    done = subprocess.run(
        command, env=env_for(tree), cwd=scratch, capture_output=True, text=True,
        timeout=TIMEOUT_S, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"crawlog {args[0]} failed ({done.returncode}): {done.stderr.strip()}")
    if not timed:
        return done.stdout, 0.0, 0.0
    wall, user, system = times.read_text().split()[-3:]
    return done.stdout, float(wall), float(user) + float(system)


def start_site(pages: int, log: Path) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "crawler.cli", "testsite", "--pages", str(pages),
               "--request-log", str(log)]  # fmt: skip
    site = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env_for(ROOT))
    assert site.stdout is not None
    line = site.stdout.readline()
    if not line.startswith("serving "):
        site.kill()
        raise SystemExit(f"the test site did not start: {line!r}")
    return site, line.split()[1]


def served(log: Path, since: int) -> tuple[int, list[Any]]:
    """(body bytes, requests) the site served after its first ``since`` requests."""
    requests = read_request_log(log)[since:]
    return sum(r.size for r in requests), requests


def one_run(
    tree: Path, scratch: Path, n: int, pages: int, workers: int, code: str = "this"
) -> dict[str, float]:
    # A site's request log and data directory of their own per tree and run: a stopped
    # site's last buffered lines, written into a log the next run's site reuses, were
    # counted as that run's (the baseline's changed pages as bytes of an unchanged recrawl).
    log, data = scratch / f"requests{n}-{code}.jsonl", scratch / f"data{n}-{code}"
    site, url = start_site(pages, log)
    where = ("--job", "bench", "--data-dir", str(data))
    try:
        _, crawl_s, crawl_cpu = crawlog(tree, scratch, "crawl", url + "/", *where, "--workers",
                                str(workers), "--delay", "0", "--per-host", "16",
                                "--concurrency", "16", timed=True)  # fmt: skip
        crawl_bytes, _ = served(log, 0)
        raw_s, raw_cpu = raw_revisit(scratch, n, url, read_request_log(log), workers)
        crawled = len(read_request_log(log))
        _, recrawl_s, recrawl_cpu = crawlog(
            tree, scratch, "recrawl", *where, "--workers", str(workers), timed=True
        )
        recrawl_bytes, _ = served(log, crawled)
        edits = max(1, round(pages * SHARE_CHANGED))
        query = f"changed={edits}&deleted={max(1, edits // 5)}&added={max(1, edits // 5)}&seed={n}"
        with urllib.request.urlopen(f"{url}{MUTATE_PATH}?{query}", timeout=30) as answer:
            mutation = json.loads(answer.read())
        before = len(read_request_log(log))  # the mutation's own request included
        _, changed_s, _ = crawlog(
            tree, scratch, "recrawl", *where, "--workers", str(workers), timed=True
        )
        _, requests = served(log, before)
        check_changes(tree, scratch, where, url, mutation, requests)
    finally:
        site.terminate()
        site.wait(timeout=60)
        crawlog(tree, scratch, "server", "stop", "--data-dir", str(data))
        shutil.rmtree(data, ignore_errors=True)
    return {
        "crawl_s": crawl_s,
        "recrawl_s": recrawl_s,
        "changed_recrawl_s": changed_s,
        "ratio": recrawl_s / crawl_s,
        "bytes_share": recrawl_bytes / crawl_bytes,
        "crawl_cpu_s": crawl_cpu,
        "recrawl_cpu_s": recrawl_cpu,
        "cpu_ratio": recrawl_cpu / crawl_cpu,
        "raw_s": raw_s,
        "raw_cpu_s": raw_cpu,
        "raw_ratio": raw_s / crawl_s,
    }


def raw_revisit(
    scratch: Path, n: int, url: str, requests: list[Any], workers: int
) -> tuple[float, float]:
    """The raw limit (``tools/raw_revisit.py``): the pages the crawl fetched whole, each
    asked for once more with its validator by bare aiohttp in ``workers`` processes, timed
    whole as a command; (wall s, CPU s). Its requests reach the site's log before the
    recrawl's, which are counted after them."""
    pages = sorted({r.path for r in requests if r.status == 200 and r.path != "/robots.txt"})
    urls, validators = scratch / f"urls{n}.txt", scratch / f"validators{n}.json"
    urls.write_text("\n".join(url + path for path in pages))
    tool = [sys.executable, str(ROOT / "tools" / "raw_revisit.py")]
    subprocess.run([*tool, "prepare", str(urls), str(validators)], check=True, timeout=TIMEOUT_S)
    times = scratch / "raw_time.txt"
    command = [TIME, "-f", TIME_FORMAT, "-o", str(times), *tool, "revisit", str(validators),
               "--processes", str(workers)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=TIMEOUT_S)
    said = done.stdout.split()
    # Every page that had a validator to send (a page without one is not asked again).
    if int(said[2]) or int(said[0]) != len(json.loads(validators.read_text())):
        raise SystemExit(f"the raw revisit was not all 304s: {done.stdout.strip()}")
    wall, user, system = times.read_text().split()[-3:]
    return float(wall), float(user) + float(system)


def check_changes(
    tree: Path,
    scratch: Path,
    where: tuple[str, ...],
    url: str,
    mutation: dict[str, list[str]],
    requests: list[Any],
) -> None:
    """The changed run found exactly what the mutation did, sent nothing else in full, and
    counted no item twice."""
    out, _, _ = crawlog(tree, scratch, "changes", *where, "--format", "jsonl")
    found = sorted((r["change"], r["url"]) for r in map(json.loads, out.splitlines()))
    wanted = sorted(
        [("changed", url + p) for p in mutation["changed"]]
        + [("gone", url + p) for p in mutation["deleted"]]
        + [("new", url + p) for p in mutation["added"]]
    )
    if found != wanted:
        raise SystemExit(f"changes listed {len(found)} pages, the site changed {len(wanted)}")
    full = {r.path for r in requests if r.status == 200 and r.path != "/robots.txt"}
    full = {p for p in full if not p.startswith(MUTATE_PATH)}
    if not full <= set(mutation["changed"]) | set(mutation["added"]):
        raise SystemExit(f"pages sent in full that did not change: {sorted(full)[:5]}")
    items, _, _ = crawlog(tree, scratch, "changes", *where, "--items", "--format", "jsonl")
    keys = [(r["key"], r["run"]) for r in map(json.loads, items.splitlines())]
    if len(keys) != len(set(keys)):
        raise SystemExit("an item change was listed twice")


def print_table(results: dict[str, list[dict[str, float]]]) -> None:
    print(f"{'code':<10} {'column':<18} {'median':>8} {'min':>8} {'max':>8}  runs")
    for code, runs in results.items():
        for column in COLUMNS:
            values = [run[column] for run in runs]
            shown = " ".join(f"{v:.3f}" for v in values)
            print(f"{code:<10} {column:<18} {statistics.median(values):>8.3f} "
                  f"{min(values):>8.3f} {max(values):>8.3f}  {shown}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--baseline", type=Path, default=None)
    args = parser.parse_args()
    trees = {"this": ROOT}
    if args.baseline is not None:
        trees = {"baseline": args.baseline.resolve(), "this": ROOT}
    results: dict[str, list[dict[str, float]]] = {code: [] for code in trees}
    with tempfile.TemporaryDirectory(prefix="crawlog-recrawl-") as scratch:
        for n in range(args.runs):
            for code, tree in trees.items():
                run = one_run(tree, Path(scratch), n, args.pages, args.workers, code)
                results[code].append(run)
                print(f"run {n + 1} {code}: crawl {run['crawl_s']:.2f} s, recrawl "
                      f"{run['recrawl_s']:.2f} s ({run['ratio']:.2f}x), changed "
                      f"{run['changed_recrawl_s']:.2f} s", file=sys.stderr)  # fmt: skip
    print_table(results)
    this = results["this"]
    crawl = statistics.median(r["crawl_s"] for r in this)
    recrawl = statistics.median(r["recrawl_s"] for r in this)
    figures: dict[str, Any] = {
        "recrawl_vs_crawl": round(recrawl / crawl, 3),
        "recrawl_vs_crawl_runs": [round(r["ratio"], 3) for r in this],
        "recrawl_cpu_vs_crawl": round(
            statistics.median(r["recrawl_cpu_s"] for r in this)
            / statistics.median(r["crawl_cpu_s"] for r in this),
            3,
        ),
        "recrawl_bytes_share": round(statistics.median(r["bytes_share"] for r in this), 4),
        "crawl_s": round(crawl, 2),
        "recrawl_s": round(recrawl, 2),
        "changed_recrawl_s": round(statistics.median(r["changed_recrawl_s"] for r in this), 2),
        "raw_revisit_vs_crawl": round(statistics.median(r["raw_s"] for r in this) / crawl, 3),
        "raw_revisit_s": round(statistics.median(r["raw_s"] for r in this), 2),
        "changes_exact": True,
        "pages": args.pages,
        "workers": args.workers,
        "runs": args.runs,
        "target_ratio": TARGET_RATIO,
        "target_bytes_share": TARGET_BYTES,
    }
    if "baseline" in results:
        base = results["baseline"]
        ratio = statistics.median(r["recrawl_s"] for r in base) / statistics.median(
            r["crawl_s"] for r in base
        )
        figures["baseline_recrawl_vs_crawl"] = round(ratio, 3)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
