"""Scrapy with crawlog's scheduler against plain Scrapy, and both against ``kill -9``.

    python tools/bench_scrapy_plugin.py [--pages N] [--concurrency C] [--rounds R] [--no-kill]

Starts ``crawlog testsite`` (N pages, default 2,000) and a private valkey-server, then:

1. Throughput: in each round, alternating which goes first, the same spider
   (``tests/crawler/scrapy/site_spider.py``: every in-site link, an item per page,
   robots.txt obeyed, CONCURRENT_REQUESTS = C) crawls the whole site as plain Scrapy and
   through crawler.scrapy (a fresh job per round). Pages/s is the pages the site served
   the run (its request log) over the process's wall time, start-up included. Medians
   and the spread (min-max) of R rounds, each round's ratio, and the machine's load
   average (1 min) before and after: the machine is shared, read the ratio.
2. ``kill -9`` at 30 %: each of Scrapy with ``JOBDIR`` and Scrapy with the plug-in is
   SIGKILLed once the site has served 30 % of its reachable pages, then the same command
   is run again to its end. Counted from the site's request log: reachable pages never
   fetched, pages fetched twice; and for the plug-in, items that are twice in
   ``crawlog export`` (after ``crawlog project --once``). ``--no-kill`` skips it.

Prints a table; the last line is one JSON object with ``plugin_vs_plain`` (pages/s ratio),
``jobdir_unfetched_after_kill``, ``plugin_unfetched_after_kill`` (pages, of
``reachable``), ``plugin_duplicate_items`` and the figures behind them.
Needs Scrapy: ``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from crawler.cli import crawlog_command
from crawler.testsite import FLUSH_INTERVAL_S, SiteMap, read_request_log
from eventlog import ensure_server, stop_server

ROOT = Path(__file__).resolve().parent.parent
SPIDER = ROOT / "tests" / "crawler" / "scrapy" / "site_spider.py"
DEFAULT_PAGES = 2_000
DEFAULT_CONCURRENCY = 16
ROUNDS = 3
KILL_AT = 0.3
POLL_S = 0.02
SEED = 0


def start_site(pages: int, request_log: Path) -> tuple[subprocess.Popen[str], str]:
    command = crawlog_command(
        "testsite", "--port", "0", "--pages", str(pages), "--seed", str(SEED),
        "--request-log", str(request_log),
    )  # fmt: skip
    site = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert site.stdout is not None
    line = site.stdout.readline()
    if not line.startswith("serving "):
        site.kill()
        raise SystemExit(f"the test site did not start: {line!r}")
    return site, line.split()[1]


def served(request_log: Path) -> list[str]:
    """Paths the site has served so far, in order (robots.txt left out)."""
    # The site flushes its log every FLUSH_INTERVAL_S: wait for the last batch.
    time.sleep(FLUSH_INTERVAL_S * 3)
    return [r.path for r in read_request_log(request_log) if r.path != "/robots.txt"]


def spider(url: str, mode: str, concurrency: int) -> list[str]:
    return [sys.executable, str(SPIDER), url + "/", mode, str(concurrency)]


def environment(redis_url: str, job: str, data_dir: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "REDIS_URL": redis_url,
        "CRAWLOG_JOB": job,
        "CRAWLOG_HOME": str(data_dir),
        "PYTHONPATH": str(ROOT),
        **extra,
    }


def timed_run(command: list[str], env: dict[str, str], request_log: Path) -> tuple[int, float]:
    """Pages the site served to one complete run, and its wall time."""
    before = len(served(request_log))
    started = time.monotonic()
    subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    elapsed = time.monotonic() - started
    return len(served(request_log)) - before, elapsed


def killed_and_rerun(
    command: list[str], env: dict[str, str], request_log: Path, kill_after: int
) -> tuple[Counter[str], int]:
    """Run, SIGKILL once the site served ``kill_after`` pages of it, run again to the
    end: how often each path was fetched over both runs, and the pages before the kill."""
    before = len(served(request_log))
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while True:
        fetched = sum(1 for r in read_request_log(request_log) if r.path != "/robots.txt")
        if fetched - before >= kill_after or process.poll() is not None:
            break
        time.sleep(POLL_S)
    process.send_signal(signal.SIGKILL)
    process.wait()
    at_kill = len(served(request_log)) - before
    # Not checked: what a kill left behind may make the second run fail (JOBDIR's queue).
    rerun = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if rerun.returncode != 0:
        print(f"  the run after the kill exited {rerun.returncode}: {rerun.stderr[-300:]}")
    paths = served(request_log)[before:]
    return Counter(paths), at_kill


def exported_item_urls(redis_url: str, job: str, data_dir: Path) -> list[str]:
    env = {**os.environ, "REDIS_URL": redis_url}
    common = ("--job", job, "--data-dir", str(data_dir))
    subprocess.run(
        crawlog_command("project", *common, "--once"), env=env, capture_output=True, check=True
    )
    out = subprocess.run(
        crawlog_command(
            "export", *common, "--what", "items", "--format", "jsonl", "--with-meta", "-"
        ),
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return [json.loads(line)["data"]["url"] for line in out.stdout.splitlines() if line.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES)
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--no-kill", action="store_true", help="throughput only")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    try:
        import scrapy  # noqa: F401
    except ImportError:
        raise SystemExit("this benchmark needs Scrapy: pip install -e '.[bench]'") from None
    with tempfile.TemporaryDirectory(prefix="crawlog-bench-") as tmp:
        request_log = Path(tmp) / "requests.jsonl"
        site, url = start_site(args.pages, request_log)
        reachable = SiteMap(args.pages, SEED, origin=url).reachable
        kill_after = int(KILL_AT * len(reachable))
        server_dir = Path(tmp) / "server"
        redis_url = ensure_server(server_dir).url
        try:
            plain_rates: list[float] = []
            plugin_rates: list[float] = []
            for r in range(args.rounds):
                job, data_dir = f"bench-{r}-{time.time_ns()}", Path(tmp) / f"data-{r}"
                runs = {
                    "plain": (spider(url, "plain", args.concurrency), dict(os.environ)),
                    "plugin": (
                        spider(url, "plugin", args.concurrency),
                        environment(redis_url, job, data_dir),
                    ),
                }
                order = ["plain", "plugin"] if r % 2 == 0 else ["plugin", "plain"]
                line = []
                for name in order:
                    pages, seconds = timed_run(*runs[name], request_log)
                    (plain_rates if name == "plain" else plugin_rates).append(pages / seconds)
                    line.append(f"{name} {pages} pages in {seconds:.1f} s")
                ratio = plugin_rates[-1] / plain_rates[-1]
                load = os.getloadavg()[0]
                print(
                    f"  round {r + 1}: {', '.join(line)}; ratio {ratio:.2f}, load {load:.1f}",
                    flush=True,
                )
            kills = (
                None
                if args.no_kill
                else kill_runs(url, redis_url, Path(tmp), request_log, args.concurrency, kill_after)
            )
        finally:
            stop_server(server_dir)
            site.terminate()
            site.wait()
    return report(args, reachable, plain_rates, plugin_rates, load_before, kills)


Kills = tuple[Counter[str], int, Counter[str], int, list[str]]
"""JOBDIR's fetch counts and pages at the kill, the plug-in's, its exported item URLs."""


def kill_runs(
    url: str, redis_url: str, tmp: Path, request_log: Path, concurrency: int, kill_after: int
) -> Kills:
    """Each of JOBDIR and the plug-in SIGKILLed at ``kill_after`` pages and run again."""
    jobdir_env = {**os.environ, "SCRAPY_JOBDIR": str(tmp / "jobdir")}
    jobdir_counts, jobdir_at_kill = killed_and_rerun(
        spider(url, "jobdir", concurrency), jobdir_env, request_log, kill_after
    )
    job, data_dir = f"bench-kill-{time.time_ns()}", tmp / "data-kill"
    plugin_counts, plugin_at_kill = killed_and_rerun(
        spider(url, "plugin", concurrency),
        environment(redis_url, job, data_dir),
        request_log,
        kill_after,
    )
    urls = exported_item_urls(redis_url, job, data_dir)
    return jobdir_counts, jobdir_at_kill, plugin_counts, plugin_at_kill, urls


def report(
    args: argparse.Namespace,
    reachable: frozenset[str],
    plain_rates: list[float],
    plugin_rates: list[float],
    load_before: float,
    kills: Kills | None,
) -> int:
    """Print the tables and the last-line JSON."""

    def unfetched(counts: Counter[str]) -> int:
        return len(reachable - set(counts))

    def refetched(counts: Counter[str]) -> int:
        return sum(1 for n in counts.values() if n > 1)

    plain, plugin = statistics.median(plain_rates), statistics.median(plugin_rates)
    ratios = [b / a for a, b in zip(plain_rates, plugin_rates, strict=True)]
    result: dict[str, float | int | list[float]] = {
        "pages": args.pages,
        "reachable": len(reachable),
        "concurrency": args.concurrency,
        "rounds": args.rounds,
        "plain_pages_per_s": round(plain, 2),
        "plugin_pages_per_s": round(plugin, 2),
        "plugin_vs_plain": round(plugin / plain, 3),
        "round_ratios": [round(x, 3) for x in ratios],
        "plain_pages_per_s_spread": [round(min(plain_rates), 2), round(max(plain_rates), 2)],
        "plugin_pages_per_s_spread": [round(min(plugin_rates), 2), round(max(plugin_rates), 2)],
        "load_before": round(load_before, 1),
        "load_after": round(os.getloadavg()[0], 1),
    }
    spread = "{:.1f}-{:.1f}"
    print(f"\n{'scrapy':<22} {'pages/s':>8}   {'spread':>11}   (C = {args.concurrency})")
    print(f"{'plain':<22} {plain:>8.1f}   {spread.format(min(plain_rates), max(plain_rates)):>11}")
    print(
        f"{'with crawlog':<22} {plugin:>8.1f}   "
        f"{spread.format(min(plugin_rates), max(plugin_rates)):>11}   "
        f"{plugin / plain:.2f} x plain (target >= 0.85)"
    )
    print(f"load average (1 min): {result['load_before']} before, {result['load_after']} after")
    if kills is None:
        print(json.dumps(result))
        return 0
    jobdir_counts, jobdir_at_kill, plugin_counts, plugin_at_kill, urls = kills
    result |= {
        "jobdir_fetched_at_kill": jobdir_at_kill,
        "jobdir_unfetched_after_kill": unfetched(jobdir_counts),
        "jobdir_refetched": refetched(jobdir_counts),
        "plugin_fetched_at_kill": plugin_at_kill,
        "plugin_unfetched_after_kill": unfetched(plugin_counts),
        "plugin_refetched": refetched(plugin_counts),
        "plugin_duplicate_items": len(urls) - len(set(urls)),
    }
    print(f"\nkill -9 at {KILL_AT:.0%} then the same command ({len(reachable)} reachable pages)")
    print(f"{'':<22} {'at kill':>8} {'never fetched':>14} {'fetched twice':>14}")
    for name, counts, at_kill in (
        ("JOBDIR", jobdir_counts, jobdir_at_kill),
        ("crawler.scrapy", plugin_counts, plugin_at_kill),
    ):
        print(f"{name:<22} {at_kill:>8} {unfetched(counts):>14} {refetched(counts):>14}")
    print(f"items twice in crawlog export: {result['plugin_duplicate_items']}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
