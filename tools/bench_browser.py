"""Rendered pages per second of crawlog ``--browser`` against Crawlee's PlaywrightCrawler.

    python tools/bench_browser.py [--pages N] [--rounds R] [--concurrency C] [--kills K]
        [--no-crawlee] [--crawlee-venv DIR] [--memory-pages M]

Starts ``crawlog testsite --layout scripted`` (a shop whose links scripts write) as a
process of its own, then, round after round and in alternating order, crawls it whole
with ``crawlog crawl --browser`` (one worker, a fresh data directory: the crawl starts its
own server, the worker its own Chromium) and with Crawlee's ``PlaywrightCrawler`` driving
the same Chromium (``find_chromium``; ``--no-sandbox`` as crawlog passes it to a root
Chromium) at the same concurrency (crawlog's pages in flight, `DEFAULT_BROWSER_PAGES`, and as
many requests in flight to the one host: ``--per-host``).
Crawlee is installed into the benchmarks' own environment (``--crawlee-venv``: the one
``tools/bench_vs_peers.py`` makes, ``~/.cache/crawlog-bench/crawlee-venv``), its Playwright
extra added there once, never into crawlog's: Playwright's own browsers are never
downloaded.

Per run: pages, wall time (start-up included), pages/s over it, CPU seconds of the run's
reaped process tree (``RUSAGE_CHILDREN``: a crawl's own server, detached, is not in it),
and the peak resident memory of its live process tree (summed over ``/proc`` every
`SAMPLE_S`). Then ``--kills`` times: a crawl is started on a data directory of its own,
SIGKILLed once its Chromium runs, and the Chromium processes that directory still marks
`ORPHAN_WAIT_S` later are counted (0 expected; see docs/crawler.md, "No orphans"). Last
line, one JSON: medians over the rounds, ``browser_vs_crawlee`` (crawlog's pages/s over
Crawlee's), ``rss_mb_peak`` (crawlog's), ``orphans_after_kills``, and the load average.

``--memory-pages M`` (the issue's bound is for 2,000): one more crawlog crawl, of a scripted
shop of M items served with a request log, its tree's RSS read every `SAMPLE_S`; the
reading just after 10 % of the site's requests were answered and the last one before its
last request (the crawl's end, before its browser closes) give ``rss_mb_at_10pct``,
``rss_mb_at_end`` and ``rss_end_over_10pct`` (bound: `MEMORY_BOUND`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_vs_peers import CRAWLEE_VENV, INSTALL_TIMEOUT_S, crawlee_python

from crawler._browser import BROWSERS_DIR, DEFAULT_BROWSER_PAGES, find_chromium, marked_processes
from crawler.testsite import read_request_log

ROOT = Path(__file__).resolve().parents[1]
RUN_TIMEOUT_S = 900
SAMPLE_S = 0.25
"""Between two readings of a run's process tree's memory."""
ORPHAN_WAIT_S = 10.0
"""How long after a kill the crawl's Chromium processes have to be gone."""
KILL_START_TIMEOUT_S = 120.0
FINISHED = re.compile(r"; ([\d,]+) pages")
MEMORY_BOUND = 1.2
"""The issue's bound: a long browser crawl's tree RSS at its end over that at its 10th
percent."""
CRAWLEE_SPIDER = textwrap.dedent(
    """
    import asyncio
    import sys

    from crawlee import ConcurrencySettings
    from crawlee.crawlers import PlaywrightCrawler, PlaywrightCrawlingContext

    START, CONCURRENCY, CHROMIUM = sys.argv[1], int(sys.argv[2]), sys.argv[3]


    async def main() -> None:
        crawler = PlaywrightCrawler(
            headless=True,
            browser_type="chromium",
            browser_launch_options={"executable_path": CHROMIUM, "args": ["--no-sandbox"]},
            concurrency_settings=ConcurrencySettings(
                min_concurrency=CONCURRENCY, desired_concurrency=CONCURRENCY,
                max_concurrency=CONCURRENCY,
            ),
        )
        pages = 0

        @crawler.router.default_handler
        async def parse(context: PlaywrightCrawlingContext) -> None:
            nonlocal pages
            pages += 1
            await context.enqueue_links()

        await crawler.run([START])
        print(pages)


    asyncio.run(main())
    """
)


def env() -> dict[str, str]:
    """No REDIS_URL (the crawl starts its own server), this checkout first on the path."""
    environment = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    environment["PYTHONPATH"] = str(ROOT)
    return environment


def crawlee_playwright(venv: Path) -> tuple[Path | None, str]:
    """The Python of the benchmark's Crawlee environment (`bench_vs_peers.crawlee_python`,
    made on first use) with Crawlee's Playwright extra added once, and Crawlee's version; or
    None and why it could not be had."""
    python, version = crawlee_python(venv)
    if python is None:
        return None, version
    check = [str(python), "-c", "import playwright"]
    if subprocess.run(check, capture_output=True, check=False).returncode == 0:
        return python, version
    print(f"adding Playwright to {venv} (once) ...", file=sys.stderr)
    install = [str(python), "-m", "pip", "install", "-q", f"crawlee[playwright]=={version}"]
    try:
        done = subprocess.run(
            install, capture_output=True, text=True, check=False, timeout=INSTALL_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"pip install crawlee[playwright]: {exc}"
    if done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["?"]
        return None, f"pip install crawlee[playwright] failed: {tail[0]}"
    return python, version


def tree_rss_mb(root: int) -> float:
    """Resident memory of ``root`` and every live descendant, in MB."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                rss[int(entry)] = int(line.split()[1])
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    return sum(rss.get(pid, 0) for pid in tree) / 1024


def measured(
    command: list[str],
    cwd: str,
    extra_env: dict[str, str],
    samples: list[tuple[float, float]] | None = None,
) -> dict[str, Any]:
    """Run ``command`` to its end: its output, wall time, CPU of its reaped tree, and the
    peak RSS of its live tree (each reading appended to ``samples`` as (epoch s, MB))."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=cwd, env={**env(), **extra_env}, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    peak = [0.0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(SAMPLE_S):
            mb = tree_rss_mb(process.pid)
            peak[0] = max(peak[0], mb)
            if samples is not None:
                samples.append((time.time(), mb))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = process.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        done.set()
        sampler.join()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "returncode": process.returncode, "out": out, "err": err, "wall_s": wall,
        "cpu_s": cpu, "rss_mb_peak": peak[0],
    }  # fmt: skip


def run_crawlog(
    url: str,
    scratch: Path,
    n: int,
    samples: list[tuple[float, float]] | None = None,
    concurrency: int = DEFAULT_BROWSER_PAGES,
) -> dict[str, Any]:
    """One crawl, its pages rendered ``concurrency`` at a time: as many pages open and as
    many requests in flight to the site's one host (``--per-host``, whose default, 2,
    would halve the navigations a worker has in flight here against Crawlee's)."""
    data_dir = scratch / f"crawlog-{n}"
    crawl = [
        sys.executable, "-m", "crawler.cli", "crawl", url + "/", "--browser",
        "--job", "bench", "--data-dir", str(data_dir), "--workers", "1",
        "--concurrency", str(concurrency), "--per-host", str(concurrency),
    ]  # fmt: skip
    run = measured(crawl, str(scratch), {}, samples)
    stop_server(data_dir)
    if run["returncode"] != 0:
        raise SystemExit(f"crawl failed (exit {run['returncode']}): {run['err'].strip()}")
    found = FINISHED.search(run["out"] + run["err"])
    run["pages"] = int(found.group(1).replace(",", "")) if found else 0
    run["orphans"] = len(marked_processes(data_dir / BROWSERS_DIR))
    return run


def run_crawlee(
    python: Path, url: str, scratch: Path, n: int, concurrency: int, chromium: str
) -> dict[str, Any]:
    spider = scratch / "crawlee_playwright.py"
    spider.write_text(CRAWLEE_SPIDER)
    storage = {"CRAWLEE_STORAGE_DIR": str(scratch / f"crawlee-{n}")}
    command = [str(python), str(spider), url + "/", str(concurrency), chromium]
    run = measured(command, str(scratch), storage)
    if run["returncode"] != 0:
        tail = run["err"].strip().splitlines()[-1:] or ["?"]
        raise SystemExit(f"Crawlee failed (exit {run['returncode']}): {tail[0]}")
    run["pages"] = int(run["out"].strip().splitlines()[-1])
    return run


def rss_at(samples: list[tuple[float, float]], served: list[float], share: float) -> float:
    """The tree's RSS (MB) at the first reading after ``share`` of the site's requests
    (their times, ``served``, sorted) had been answered; ``share`` 1 is the crawl's last
    request: its end, before the browser and the workers close."""
    if not samples or not served:
        return 0.0
    moment = served[max(0, min(len(served), round(share * len(served))) - 1)]
    after = [mb for at, mb in samples if at >= moment]
    if share >= 1:
        before = [mb for at, mb in samples if at <= moment]
        return before[-1] if before else after[0]
    return after[0] if after else samples[-1][1]


def memory_bound(pages: int, scratch: Path) -> dict[str, Any]:
    """One crawlog crawl of a scripted shop of ``pages`` items, its tree's RSS read every
    `SAMPLE_S`: at the 10th percent of the site's requests and at the last one."""
    log = scratch / "memory-requests.jsonl"
    site_command = [
        sys.executable, "-m", "crawler.cli", "testsite", "--layout", "scripted",
        "--pages", str(pages), "--request-log", str(log), "--seed", "7",
    ]  # fmt: skip
    site = subprocess.Popen(site_command, stdout=subprocess.PIPE, text=True, env=env())
    samples: list[tuple[float, float]] = []
    try:
        assert site.stdout is not None
        line = site.stdout.readline()
        if not line.startswith("serving "):
            raise SystemExit(f"the test site did not start: {line!r}")
        run = run_crawlog(line.split()[1], scratch, -1, samples)
    finally:
        site.terminate()
        site.wait()
    served = sorted(r.time for r in read_request_log(log))
    at_10, at_end = rss_at(samples, served, 0.1), rss_at(samples, served, 1.0)
    return {
        "pages": run["pages"], "wall_s": run["wall_s"], "requests": len(served),
        "rss_mb_at_10pct": at_10, "rss_mb_at_end": at_end, "rss_mb_peak": run["rss_mb_peak"],
        "rss_end_over_10pct": at_end / at_10 if at_10 else None,
    }  # fmt: skip


def stop_server(data_dir: Path) -> None:
    stop = [sys.executable, "-m", "crawler.cli", "server", "stop", "--data-dir", str(data_dir)]
    subprocess.run(stop, env=env(), capture_output=True, timeout=60, check=False)


def orphans_after_kills(url: str, scratch: Path, kills: int) -> int:
    """Chromium processes left ``ORPHAN_WAIT_S`` after each of ``kills`` SIGKILLs of a
    whole crawl (the same job, resumed each time), summed."""
    data_dir = scratch / "kills"
    marked = data_dir / BROWSERS_DIR
    crawl = [
        sys.executable, "-m", "crawler.cli", "crawl", url + "/", "--browser",
        "--job", "kills", "--data-dir", str(data_dir), "--workers", "1",
    ]  # fmt: skip
    left = 0
    for _ in range(kills):
        process = subprocess.Popen(
            crawl, cwd=scratch, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + KILL_START_TIMEOUT_S
        while not marked_processes(marked) and process.poll() is None:
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait()
        deadline = time.monotonic() + ORPHAN_WAIT_S
        while marked_processes(marked) and time.monotonic() < deadline:
            time.sleep(0.1)
        left += len(marked_processes(marked))
    stop_server(data_dir)
    return left


def median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(run[key] for run in runs) if runs else 0.0


def rate(run: dict[str, Any]) -> float:
    return float(run["pages"] / run["wall_s"]) if run["wall_s"] else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200, help="items of the shop")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=DEFAULT_BROWSER_PAGES)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--no-crawlee", action="store_true")
    parser.add_argument("--crawlee-venv", type=Path, default=CRAWLEE_VENV)
    parser.add_argument(
        "--memory-pages",
        type=int,
        default=0,
        help="also crawl a scripted shop of this many items once, its tree's RSS at the 10th "
        "percent of its requests and at its end (the issue's bound: 2000) [default: not]",
    )
    args = parser.parse_args()
    chromium = find_chromium()
    python: Path | None = None
    if not args.no_crawlee:
        python, version = crawlee_playwright(args.crawlee_venv)
        if python is None:
            raise SystemExit(f"Crawlee cannot be had: {version}")
        print(f"Crawlee {version}, Chromium {chromium}", file=sys.stderr)
    site_command = [
        sys.executable, "-m", "crawler.cli", "testsite",
        "--layout", "scripted", "--pages", str(args.pages),
    ]  # fmt: skip
    site = subprocess.Popen(site_command, stdout=subprocess.PIPE, text=True, env=env())
    ours: list[dict[str, Any]] = []
    theirs: list[dict[str, Any]] = []
    try:
        assert site.stdout is not None
        line = site.stdout.readline()
        if not line.startswith("serving "):
            raise SystemExit(f"the test site did not start: {line!r}")
        url = line.split()[1]
        with tempfile.TemporaryDirectory(prefix="bench-browser-") as scratch_dir:
            scratch = Path(scratch_dir)
            for n in range(args.rounds):
                order = ["crawlog", "crawlee"] if n % 2 == 0 else ["crawlee", "crawlog"]
                for who in order:
                    if who == "crawlog":
                        ours.append(run_crawlog(url, scratch, n, concurrency=args.concurrency))
                    elif python is not None:
                        theirs.append(
                            run_crawlee(python, url, scratch, n, args.concurrency, chromium)
                        )
            orphans = orphans_after_kills(url, scratch, args.kills) if args.kills else 0
            memory = memory_bound(args.memory_pages, scratch) if args.memory_pages else None
    finally:
        site.terminate()
        site.wait()
    report(args, ours, theirs, orphans, memory)


def report(
    args: argparse.Namespace,
    ours: list[dict[str, Any]],
    theirs: list[dict[str, Any]],
    orphans: int,
    memory: dict[str, Any] | None = None,
) -> None:
    print(f"{'crawler':>8} {'pages':>6} {'wall s':>7} {'pages/s':>8} {'CPU s':>7} {'RSS MB':>7}")
    for who, runs in (("crawlog", ours), ("crawlee", theirs)):
        for run in runs:
            print(
                f"{who:>8} {run['pages']:>6} {run['wall_s']:>7.1f} {rate(run):>8.2f} "
                f"{run['cpu_s']:>7.1f} {run['rss_mb_peak']:>7.0f}"
            )
    if memory is not None:
        ratio = memory["rss_end_over_10pct"]
        print(
            f"memory: {memory['pages']:,} pages in {memory['wall_s']:.0f} s, tree RSS "
            f"{memory['rss_mb_at_10pct']:.0f} MB at 10 % of its requests, "
            f"{memory['rss_mb_at_end']:.0f} MB at its end: x{ratio or 0:.2f} "
            f"(bound x{MEMORY_BOUND}); peak {memory['rss_mb_peak']:.0f} MB"
        )
    for run in ours:
        run["rate"] = rate(run)
    for run in theirs:
        run["rate"] = rate(run)
    ours_rate, theirs_rate = median(ours, "rate"), median(theirs, "rate")
    figures = {
        "pages": int(median(ours, "pages")),
        "crawlee_pages": int(median(theirs, "pages")),
        "rounds": args.rounds,
        "concurrency": args.concurrency,
        "browser_pages_per_s": round(ours_rate, 2),
        "crawlee_pages_per_s": round(theirs_rate, 2),
        "browser_vs_crawlee": round(ours_rate / theirs_rate, 2) if theirs_rate else None,
        "pages_per_s_spread": [round(r["rate"], 2) for r in ours],
        "crawlee_pages_per_s_spread": [round(r["rate"], 2) for r in theirs],
        "cpu_s": round(median(ours, "cpu_s"), 1),
        "crawlee_cpu_s": round(median(theirs, "cpu_s"), 1),
        "rss_mb_peak": round(max((r["rss_mb_peak"] for r in ours), default=0.0)),
        "crawlee_rss_mb_peak": round(max((r["rss_mb_peak"] for r in theirs), default=0.0)),
        "orphans_after_crawl": sum(r["orphans"] for r in ours),
        "kills": args.kills,
        "orphans_after_kills": orphans,
        "load_1m": round(os.getloadavg()[0], 1),
    }
    if memory is not None:
        ratio = memory["rss_end_over_10pct"]
        figures |= {
            "memory_pages": memory["pages"],
            "rss_mb_at_10pct": round(memory["rss_mb_at_10pct"]),
            "rss_mb_at_end": round(memory["rss_mb_at_end"]),
            "memory_rss_mb_peak": round(memory["rss_mb_peak"]),
            "rss_end_over_10pct": round(ratio, 2) if ratio else None,
            "rss_bound_met": ratio is not None and ratio <= MEMORY_BOUND,
        }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
