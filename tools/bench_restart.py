"""How soon a crawl restarted after ``kill -9`` makes its first request: the README's tour.

    python tools/bench_restart.py [--runs N] [--baseline DIR] [--pages N] [--kill-after N]

Each run is the tour's steps 2 and 3 against the test site (every fault on, as
``crawlog testsite --faults all``): ``crawlog crawl SITE --job tour --workers 2`` (the
default ``--per-host 2``), SIGKILLed by its pid once the site has served ``--kill-after``
requests (as ``kill -9 $!``: its workers and projector die with it, the server lives on),
then the same command again. A kill counts only if the dead workers held host slots, i.e.
pages were in flight (else the run is repeated). Measured from the restart's spawn
(interpreter start included), in seconds:

  first_line_s      the crawl prints its first line (the job, its seeds and workers)
  worker_spawn_s    the first worker process exists (its start time, from /proc)
  first_request_s   the test site sees the first request (its arrival: the site logs a
                    request when it answers, so a slow page's delay is taken off)

With ``--baseline DIR`` (a checkout of other code, e.g. ``git worktree add --detach DIR
main``), the runs alternate between DIR and this checkout, so that a busy machine slows
both alike. Prints a table (median and range per column) and, as its last line, one JSON
object: ``first_request_s`` (median, this checkout) and the rest. Target: <= 2.0 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from anyio.abc import Process

from crawler.testsite import Faults, serve_testsite
from eventlog import JobKeys, connect, ensure_server, stop_server

ROOT = Path(__file__).resolve().parent.parent
JOB = "tour"
WORKERS = 2
DEFAULT_RUNS = 5
DEFAULT_PAGES = 1500
DEFAULT_KILL_AFTER = 150
KILL_TRIES = 5
POLL_S = 0.002
RUN_DEADLINE_S = 120.0
COLUMNS = ("first_line_s", "worker_spawn_s", "first_request_s")


def crawl_command(site: str, data_dir: Path) -> list[str]:
    return [
        sys.executable, "-m", "crawler.cli", "crawl", site + "/", "--job", JOB,
        "--workers", str(WORKERS), "--data-dir", str(data_dir),
    ]  # fmt: skip


def env_for(tree: Path) -> dict[str, str]:
    """The tour's environment (no REDIS_URL: the crawl finds its own server), with
    ``tree``'s code first on the path."""
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env["PYTHONPATH"] = str(tree)
    return env


def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def started_at(pid: int) -> float | None:
    """When process ``pid`` started, as a ``time.time()`` (to the kernel's clock tick)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    # A worker the crawl forked has the crawl's command line, and its own name.
    forked = stat.split("(", 1)[1].startswith("crawlog-w")
    if b"worker" not in cmdline.split(b"\0") and not forked:
        return None
    ticks = int(stat.rsplit(")", 1)[1].split()[19])
    # Start times count from boot: /proc/uptime places boot on this clock finer than btime.
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")


async def held_slots(url: str) -> int:
    keys = JobKeys(JOB)
    async with connect(url) as client:
        return sum([await client.hlen(keys.slots_held(f"w{n}")) for n in range(1, WORKERS + 1)])


async def dead(process: Process) -> None:
    """Wait until the killed crawl and its children are gone."""
    kids = children(process.pid)
    process.kill()
    await process.wait()
    while any(Path(f"/proc/{k}").exists() and _running(k) for k in kids):
        await anyio.sleep(POLL_S)


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def one_run(
    tree: Path, pages: int, kill_after: int, seed: int, show: bool
) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="crawlog-bench-") as tmp:
        data_dir = Path(tmp) / ".crawlog"
        url = ensure_server(data_dir).url
        try:
            return await _measure(tree, url, data_dir, pages, kill_after, seed)
        finally:
            if show:
                print((Path(tmp) / "restart.err").read_text())
            stop_server(data_dir)


async def _measure(
    tree: Path, url: str, data_dir: Path, pages: int, kill_after: int, seed: int
) -> dict[str, float]:
    env = env_for(tree)
    out = data_dir.parent / "crawl.out"
    async with serve_testsite(pages=pages, seed=seed, faults=Faults.all()) as site:
        command = crawl_command(site.url, data_dir)
        with anyio.fail_after(RUN_DEADLINE_S):
            for _ in range(KILL_TRIES):
                with out.open("wb") as sink:
                    crawl = await anyio.open_process(
                        command, cwd=tree, env=env, stdout=sink, stderr=sink
                    )
                target = site.request_count + kill_after
                while site.request_count < target:
                    if crawl.returncode is not None:
                        raise SystemExit(f"the crawl ended before the kill:\n{out.read_text()}")
                    await anyio.sleep(POLL_S)
                await dead(crawl)
                if await held_slots(url):
                    break  # pages were in flight
            else:
                raise SystemExit(f"no kill in {KILL_TRIES} tries found pages in flight")
            slots = await held_slots(url)
            seen = len(site.requests)
            began = time.time()
            with (data_dir.parent / "restart.err").open("wb") as sink:
                restarted = await anyio.open_process(
                    command, cwd=tree, env=env, stdout=-1, stderr=sink
                )
            assert restarted.stdout is not None
            first_line: list[float] = []
            spawned: list[float] = []

            async def read_stdout() -> None:
                assert restarted.stdout is not None
                async for _ in restarted.stdout:
                    if not first_line:
                        first_line.append(time.time())

            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(read_stdout)
                    arrival = None
                    while arrival is None:
                        if restarted.returncode is not None:
                            raise SystemExit(f"the restart ended early:\n{out.read_text()}")
                        if not spawned:
                            times = [started_at(k) for k in children(restarted.pid)]
                            spawned += sorted(t for t in times if t is not None)[:1]
                        # A dead worker's request may be answered (and logged) after
                        # the restart: the site answers a slow page even to nobody.
                        for request in site.requests[seen:]:
                            plan = site.sitemap.fault_plan(request.path)
                            if request.time - plan.delay_s >= began:
                                arrival = request.time - plan.delay_s
                                break
                        seen = len(site.requests) if arrival is None else seen
                        await anyio.sleep(POLL_S)
                    while not first_line:
                        await anyio.sleep(POLL_S)
                    tg.cancel_scope.cancel()
            finally:
                with anyio.CancelScope(shield=True):
                    await dead(restarted)
    assert arrival is not None
    return {
        "first_line_s": first_line[0] - began,
        "worker_spawn_s": spawned[0] - began if spawned else float("nan"),
        "first_request_s": arrival - began,
        "slots_held_at_kill": slots,
    }


def print_table(results: dict[str, list[dict[str, float]]]) -> None:
    print(f"\n{'code':<12}" + "".join(f"{c:>24}" for c in COLUMNS))
    for name, runs in results.items():
        cells = []
        for column in COLUMNS:
            values = [r[column] for r in runs if r[column] == r[column]]
            if not values:
                cells.append(f"{'-':>24}")
                continue
            spread = f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"
            cells.append(f"{spread:>24}")
        print(f"{name:<12}" + "".join(cells))
    print("median (min-max) seconds from the restart's spawn; target first_request_s <= 2.0")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="runs per checkout")
    parser.add_argument("--baseline", type=Path, help="another checkout to alternate with")
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES)
    parser.add_argument("--kill-after", type=int, default=DEFAULT_KILL_AFTER)
    parser.add_argument("--show-output", action="store_true", help="the restart's stderr")
    args = parser.parse_args()
    trees = {"this": ROOT}
    if args.baseline is not None:
        trees = {"baseline": args.baseline.resolve(), **trees}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for run in range(args.runs):
        for name, tree in trees.items():
            result = anyio.run(
                one_run, tree, args.pages, args.kill_after, run + 1, args.show_output
            )
            results[name].append(result)
            load = os.getloadavg()[0]
            print(
                f"run {run + 1} {name:<8} " + "  ".join(f"{c} {result[c]:.3f}" for c in COLUMNS)
                + f"  slots held at kill {result['slots_held_at_kill']:.0f}  load {load:.2f}",
                flush=True,
            )  # fmt: skip
    print_table(results)
    summary: dict[str, float | int] = {
        column: round(statistics.median(r[column] for r in results["this"]), 3)
        for column in COLUMNS
    }
    summary["first_request_max_s"] = round(max(r["first_request_s"] for r in results["this"]), 3)
    if "baseline" in results:
        summary["baseline_first_request_s"] = round(
            statistics.median(r["first_request_s"] for r in results["baseline"]), 3
        )
    summary["runs"] = args.runs
    summary["load"] = round(os.getloadavg()[0], 2)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
