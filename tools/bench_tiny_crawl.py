"""How long a 1-page crawl takes from the command's start: ``crawlog crawl URL --depth 0``.

    python tools/bench_tiny_crawl.py [--runs N] [--baseline DIR] [--workers N]
                                     [--no-compile] [--no-scrapy]

Each run is the whole command under ``/usr/bin/time``, against the test site (started
once, as ``crawlog testsite``), with a fresh ``--data-dir``: so it pays what a first crawl
pays, the embedded server's start included (the server is stopped after each run, outside
the measure). Columns per run: wall seconds, CPU seconds (user + system, of the command
and every process it waited for: its workers and its projector), the CPU the embedded
server had used by the crawl's end (a daemon the command does not wait for: read from
``/proc`` before it is stopped; ``tree_cpu_s`` adds it), and the peak RSS of the largest
process.

With ``--baseline DIR`` (a checkout of other code, e.g. ``git archive main | tar -x -C
DIR``), the runs alternate between DIR and this checkout, so that a busy machine slows
both alike. Each checkout's bytecode is written first (``compileall``), so neither run
pays for compiling its modules; ``--no-compile`` leaves them as they are (with
``PYTHONDONTWRITEBYTECODE`` set, as here, a checkout without bytecode compiles in every
process until a crawl has written it: ``crawler/cli/_bytecode.py``). If Scrapy is
installed (and unless ``--no-scrapy``), a one-page ``scrapy runspider`` of the same page is
alternated with them as the peer.

The raw limit beside them (``imports``, unless ``--no-floor``): a bare interpreter importing
every module a one-page crawl's processes import that is not crawlog's own (redis-py,
asyncio, aiohttp, httpx, Arrow...: found once, before the rounds, by one crawl run with
``PYTHONPROFILEIMPORTTIME``), alternated with the crawls. Its CPU is what the crawl's
dependencies cost to load in one process, with no server, no request and no fork: a
one-page crawl cannot cost less than that without dropping one of them.

Prints a table (median, min and max per column) and, as its last line, one JSON object:
``tiny_crawl_wall_s`` (median wall, this checkout; ``tiny_crawl_s`` the same, its older
name), ``tiny_crawl_cpu_s``, their spreads, ``imports_floor_cpu_s`` (and the ratio
``tiny_crawl_cpu_vs_imports_floor``), ``scrapy_tiny_wall_s`` and the rest. Targets:
<= 0.4 s wall and <= 0.35 s CPU.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
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
TARGET_WALL_S = 0.4
TARGET_CPU_S = 0.35
COLUMNS = ("wall_s", "cpu_s", "server_cpu_s", "tree_cpu_s", "max_rss_mb")
SCRAPY = "scrapy"
"""The peer's name among the trees in the results."""
SCRAPY_SPIDER = """
import scrapy


class One(scrapy.Spider):
    name = "one"
    custom_settings = {"ROBOTSTXT_OBEY": False, "TELNETCONSOLE_ENABLED": False,
                       "LOG_LEVEL": "ERROR"}

    def __init__(self, url: str, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [url]

    def parse(self, response):
        yield {"url": response.url, "title": response.css("title::text").get()}
"""
"""A one-page Scrapy crawl: the page fetched and one item scraped, as crawlog's."""
FLOOR = "imports"
"""The raw limit's name among the trees in the results."""
IMPORT_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)\s*$")
OWN_MODULES = re.compile(r"^(crawler|eventlog|projector|tests|tools)(\.|$)|^__editable__")
"""crawlog's own modules (and its editable install's finder): not part of the floor."""
IMPORT_ALL = """
import importlib, sys
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except ImportError:
        pass  # an optional module the library tried and did without, as in the crawl
"""
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
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


def timed(command: list[str], *, env: dict[str, str], scratch: Path, n: int) -> dict[str, float]:
    """``command`` run under ``/usr/bin/time`` from ``scratch``: wall, CPU (its own and that
    of every process it waited for) and peak RSS."""
    times = scratch / f"time{n}.txt"
    # From the scratch directory: ``python -m`` puts the working directory first on the
    # path, so run from a checkout it ran that checkout's code, whatever PYTHONPATH said
    # (the baseline ran this checkout's code when the tool was run from here).
    done = subprocess.run(
        [TIME, "-f", TIME_FORMAT, "-o", str(times), *command],
        env=env, cwd=scratch, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
        check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{command[2:4]} failed (exit {done.returncode}): {done.stderr.strip()}")
    wall, user, system, rss_kb = times.read_text().split()[-4:]
    return {
        "wall_s": float(wall),
        "cpu_s": float(user) + float(system),
        "max_rss_mb": int(rss_kb) / 1024,
    }


def server_cpu(data_dir: Path) -> float:
    """CPU seconds the data directory's server has used (user + system), from ``/proc``."""
    try:
        pid = int((data_dir / "valkey.pid").read_text())
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, ValueError):
        return 0.0
    # utime and stime: fields 14 and 15 of stat(5), the 12th and 13th after the name.
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def one_run(tree: Path, url: str, scratch: Path, n: int, workers: int | None) -> dict[str, float]:
    data_dir = scratch / f"run{n}"
    command = [
        sys.executable, "-m", "crawler.cli", "crawl", url + "/", "--depth", "0",
        "--job", "tiny", "--data-dir", str(data_dir),
        *(("--workers", str(workers)) if workers is not None else ()),
    ]  # fmt: skip
    env = env_for(tree)
    try:
        run = timed(command, env=env, scratch=scratch, n=n)
        run["server_cpu_s"] = server_cpu(data_dir)
    finally:
        stop = [sys.executable, "-m", "crawler.cli", "server", "stop", "--data-dir", str(data_dir)]
        subprocess.run(
            stop, env=env, cwd=scratch, capture_output=True, timeout=RUN_TIMEOUT_S, check=False
        )
        shutil.rmtree(data_dir, ignore_errors=True)
    run["tree_cpu_s"] = run["cpu_s"] + run["server_cpu_s"]
    return run


def modules_a_crawl_imports(url: str, scratch: Path) -> list[str]:
    """Every module the processes of one one-page crawl import that is not crawlog's own,
    in the order first imported (``PYTHONPROFILEIMPORTTIME``: each process, forked or not,
    writes a line per import on the stderr the crawl passes on)."""
    data_dir = scratch / "modules"
    command = [
        sys.executable, "-m", "crawler.cli", "crawl", url + "/", "--depth", "0",
        "--job", "modules", "--data-dir", str(data_dir),
    ]  # fmt: skip
    env = {**env_for(ROOT), "PYTHONPROFILEIMPORTTIME": "1"}
    try:
        done = subprocess.run(
            command, env=env, cwd=scratch, capture_output=True, text=True,
            timeout=RUN_TIMEOUT_S, check=False,
        )  # fmt: skip
    finally:
        stop = [sys.executable, "-m", "crawler.cli", "server", "stop", "--data-dir", str(data_dir)]
        subprocess.run(stop, env=env_for(ROOT), cwd=scratch, capture_output=True, check=False)
        shutil.rmtree(data_dir, ignore_errors=True)
    if done.returncode != 0:
        raise SystemExit(f"the crawl to list its imports failed: {done.stderr.strip()[-500:]}")
    names: dict[str, None] = {}
    for line in done.stderr.splitlines():
        if (found := IMPORT_LINE.match(line)) and not OWN_MODULES.match(found[1]):
            names.setdefault(found[1])
    if not names:
        raise SystemExit("the crawl printed no import times: PYTHONPROFILEIMPORTTIME unheeded?")
    return list(names)


def floor_run(modules: list[str], scratch: Path, n: int) -> dict[str, float]:
    """A bare interpreter importing ``modules``: the crawl's dependencies, loaded once."""
    command = [sys.executable, "-c", IMPORT_ALL, *modules]
    run = timed(command, env=env_for(ROOT), scratch=scratch, n=n)
    return {**run, "server_cpu_s": 0.0, "tree_cpu_s": run["cpu_s"]}


def scrapy_run(url: str, scratch: Path, n: int) -> dict[str, float]:
    """The peer: ``scrapy runspider`` of a one-page spider (the same page, one item)."""
    spider = scratch / "one_page_spider.py"
    spider.write_text(SCRAPY_SPIDER)
    out = scratch / f"scrapy{n}.jsonl"
    command = [
        sys.executable, "-m", "scrapy.cmdline", "runspider", str(spider),
        "-a", f"url={url}/", "-o", str(out),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    run = timed(command, env=env, scratch=scratch, n=n)
    if not out.exists() or not out.read_text().strip():
        raise SystemExit("the Scrapy run scraped nothing")
    out.unlink()
    return {**run, "server_cpu_s": 0.0, "tree_cpu_s": run["cpu_s"]}


def has_scrapy() -> bool:
    return importlib.util.find_spec("scrapy") is not None


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


def figures_of(code: str, runs: list[dict[str, float]]) -> dict[str, object]:
    """``<code>_wall_s``, ``<code>_cpu_s`` (medians) and their spreads, rounded."""
    out: dict[str, object] = {}
    for column, name in (("wall_s", "wall"), ("cpu_s", "cpu"), ("tree_cpu_s", "tree_cpu")):
        values = [run[column] for run in runs]
        out[f"{code}_{name}_s"] = round(statistics.median(values), 3)
        out[f"{code}_{name}_spread_s"] = [round(min(values), 3), round(max(values), 3)]
    return out


def run_all(
    trees: dict[str, Path], url: str, runs: int, workers: int | None, scrapy: bool, floor: bool
) -> dict[str, list[dict[str, float]]]:
    """``runs`` rounds, each running every tree once (and the peer, and the floor),
    alternated."""
    results: dict[str, list[dict[str, float]]] = {code: [] for code in trees}
    if scrapy:
        results[SCRAPY] = []
    with tempfile.TemporaryDirectory(prefix="crawlog-tiny-") as scratch:
        modules = modules_a_crawl_imports(url, Path(scratch)) if floor else []
        if floor:
            results[FLOOR] = []
            print(f"the floor imports {len(modules)} modules", file=sys.stderr)
        for n in range(runs):
            for code in results:
                if code == SCRAPY:
                    run = scrapy_run(url, Path(scratch), n)
                elif code == FLOOR:
                    run = floor_run(modules, Path(scratch), n)
                else:
                    run = one_run(trees[code], url, Path(scratch), n, workers)
                results[code].append(run)
                print(f"run {n + 1} {code}: {run['wall_s']:.2f} s wall, "
                      f"{run['cpu_s']:.2f} s CPU", file=sys.stderr)  # fmt: skip
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--baseline", type=Path, default=None, help="other code to alternate with")
    parser.add_argument("--workers", type=int, default=None, help="--workers of the crawl")
    parser.add_argument("--no-compile", action="store_true", help="leave bytecode as it is")
    parser.add_argument("--no-scrapy", action="store_true", help="no Scrapy peer")
    parser.add_argument("--no-floor", action="store_true", help="no import floor")
    args = parser.parse_args()
    trees = {"this": ROOT}
    if args.baseline is not None:
        trees = {"baseline": args.baseline.resolve(), "this": ROOT}
    if not args.no_compile:
        for tree in trees.values():
            compile_tree(tree)
    scrapy = not args.no_scrapy and has_scrapy()
    site, url = start_site()
    try:
        results = run_all(trees, url, args.runs, args.workers, scrapy, not args.no_floor)
    finally:
        site.terminate()
        site.wait(timeout=RUN_TIMEOUT_S)
    print_table(results)
    figures: dict[str, object] = {
        **figures_of("tiny_crawl", results["this"]),
        "tiny_crawl_server_cpu_s": round(
            statistics.median(r["server_cpu_s"] for r in results["this"]), 3
        ),
        "target_wall_s": TARGET_WALL_S,
        "target_cpu_s": TARGET_CPU_S,
        "runs": args.runs,
        "compiled_first": not args.no_compile,
    }
    figures["tiny_crawl_s"] = figures["tiny_crawl_wall_s"]  # its name before
    if "baseline" in results:
        figures.update(figures_of("baseline_tiny_crawl", results["baseline"]))
    if SCRAPY in results:
        figures.update(figures_of("scrapy_tiny", results[SCRAPY]))
    if FLOOR in results:
        cpu = [run["cpu_s"] for run in results[FLOOR]]
        floor_cpu = statistics.median(cpu)
        figures["imports_floor_cpu_s"] = round(floor_cpu, 3)
        figures["imports_floor_cpu_spread_s"] = [round(min(cpu), 3), round(max(cpu), 3)]
        figures["tiny_crawl_cpu_vs_imports_floor"] = round(
            statistics.median(r["cpu_s"] for r in results["this"]) / floor_cpu, 3
        )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
