"""crawlog against its peers, Scrapy and Crawlee, on the docs and the link-dense test sites.

    python tools/bench_vs_peers.py [--rounds R] [--docs-pages N] [--link-dense-pages N]
        [--workers W] [--concurrency C] [--peers scrapy,crawlee] [--quick]

For each layout (``crawlog testsite --layout docs``, ~1,200 pages of 10-20 KB; then
``--layout link-dense``, 500 pages of ~100 KB with hundreds of links), the site runs as its
own process, and each round crawls it completely with every crawler, whole commands,
the order rotated from round to round:

- ``crawlog crawl`` (W worker processes x C fetches, W x C a host, the default spider), in a
  fresh data directory, so the command starts its own valkey-server as a first crawl does;
  the server is stopped after the command and its CPU counted;
- Scrapy (``pip install -e '.[bench]'``): one process, CONCURRENT_REQUESTS and
  CONCURRENT_REQUESTS_PER_DOMAIN = W x C, its ``LinkExtractor`` (the spider of
  ``tools/bench_vs_scrapy.py``), an item per page;
- Crawlee (``BeautifulSoupCrawler``, ``enqueue_links``, an item per page with
  ``push_data``, its concurrency pinned at W x C), installed on first use into a virtual
  environment of the benchmark's own (``--crawlee-venv``, by default
  ``~/.cache/crawlog-bench/crawlee-venv``; ``pip install 'crawlee[beautifulsoup]'``), never
  into crawlog's; if it cannot be installed the tool says why and goes on without it.

All obey robots.txt and have no per-host delay. Each crawler also crawls the home page
alone (crawlog ``--depth 0``, as many workers; the peers' spiders told not to follow), to
take its fixed cost out: marginal CPU per page = (crawl CPU - one-page crawl CPU) / pages.
Pages are those the site served to the command (its request log, robots.txt not counted;
Scrapy's link extractor skips PDFs, the others fetch them). CPU is the process tree's: the
command and every process it started (``RUSAGE_CHILDREN``; this process is their subreaper, so the
daemonized valkey-server is reaped and counted here), not the test site's. In the same
round, this process parses every page of the site with the worker's parser and resolves
its links (``parse_resolve_cpu`` of ``tools/bench_vs_scrapy.py``): the least a crawl could
spend per page.

Prints a table per layout (medians of the rounds, min-max), the load average before and
after; the last line is one JSON object with at least ``docs_vs_best_peer`` (crawlog's
pages/s over the best peer's, round by round, median; target >= 2),
``docs_marginal_cpu_ms_per_page`` (target <= 1.2), ``linkdense_vs_best_peer`` (target
>= 3) and ``linkdense_marginal_vs_parse`` (marginal CPU per page over the parse's, target
<= 2.5). ``--quick`` is one round of small sites (for a test that the tool runs).

``--baseline DIR`` (a checkout of other code, e.g. ``git archive main | tar -x -C DIR``)
crawls with DIR's crawlog too, as one more crawler in the rotation (``baseline`` in the
table and the JSON; not a peer): an A/B of a change on the same sites and the same rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tiny_crawl import compile_tree
from bench_vs_scrapy import (
    SCRAPY_SPIDER,
    ProcessSampler,
    become_subreaper,
    children_cpu,
    compile_checkout,
    parse_resolve_cpu,
    reap_orphans,
    served,
    start_site,
)

from crawler.cli import crawlog_command
from crawler.testsite import SiteMap
from eventlog import stop_server

ROUNDS = 3
DOCS_PAGES = 1_200
LINK_DENSE_PAGES = 500
QUICK_DOCS_PAGES = 150
QUICK_LINK_DENSE_PAGES = 60
DEFAULT_WORKERS = 2
DEFAULT_CONCURRENCY = 16
PEERS = ("scrapy", "crawlee")
CRAWLEE_VENV = Path.home() / ".cache" / "crawlog-bench" / "crawlee-venv"
CRAWLEE_PACKAGE = "crawlee[beautifulsoup]"
INSTALL_TIMEOUT_S = 900
RUN_TIMEOUT_S = 900
TARGETS = {"docs": (2.0, 1.2), "link-dense": (3.0, 2.5)}
"""Per layout: vs best peer at least, and the marginal figure at most (ms a page for docs,
times the parse for link-dense)."""

SCRAPY_ONE_PAGE = SCRAPY_SPIDER.replace("self.links.extract_links(response)", "()")
assert SCRAPY_ONE_PAGE != SCRAPY_SPIDER
CRAWLEE_SPIDER = textwrap.dedent(
    """
    import asyncio
    import sys

    from crawlee import ConcurrencySettings
    from crawlee.crawlers import BeautifulSoupCrawler, BeautifulSoupCrawlingContext

    START, CONCURRENCY, FOLLOW = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"


    async def main() -> None:
        crawler = BeautifulSoupCrawler(
            concurrency_settings=ConcurrencySettings(
                min_concurrency=CONCURRENCY, desired_concurrency=CONCURRENCY,
                max_concurrency=CONCURRENCY,
            ),
            respect_robots_txt_file=True,
        )
        pages = 0

        @crawler.router.default_handler
        async def parse(context: BeautifulSoupCrawlingContext) -> None:
            nonlocal pages
            pages += 1
            title = context.soup.title
            await context.push_data({
                "url": context.request.url, "status": context.http_response.status_code,
                "title": title.string if title else None,
            })
            if FOLLOW:
                await context.enqueue_links()

        await crawler.run([START])
        print(pages)


    asyncio.run(main())
    """
)


def crawlee_python(venv: Path) -> tuple[Path | None, str]:
    """The Python of the benchmark's Crawlee environment, made on first use, and Crawlee's
    version; or None and why it could not be had."""
    python = venv / "bin" / "python"
    check = [str(python), "-c", "import crawlee.crawlers, importlib.metadata as m; "
             "print(m.version('crawlee'))"]  # fmt: skip
    if python.exists():
        found = subprocess.run(check, capture_output=True, text=True, check=False)
        if found.returncode == 0:
            return python, found.stdout.strip()
    print(f"installing Crawlee into {venv} (once) ...", file=sys.stderr)
    steps = (
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "-q", CRAWLEE_PACKAGE],
        check,
    )
    for step in steps:
        try:
            done = subprocess.run(
                step, capture_output=True, text=True, check=False, timeout=INSTALL_TIMEOUT_S
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"{' '.join(step[:4])}: {exc}"
        if done.returncode != 0:
            tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["?"]
            return None, f"{' '.join(step[:4])} failed: {tail[0]}"
    return python, done.stdout.strip()


class Bench:
    """One layout's site and the crawlers' commands against it."""

    def __init__(self, args: argparse.Namespace, url: str, request_log: Path, scratch: Path):
        self.url = url
        self.request_log = request_log
        self.scratch = scratch
        self.workers = args.workers
        self.concurrency = args.concurrency
        self.total = args.workers * args.concurrency
        self.crawlee: Path | None = None
        self.baseline: Path | None = args.baseline
        self.keep: set[int] = set()

    def command(self, crawler: str, follow: bool, data: Path) -> tuple[list[str], Path | None]:
        """The command that crawls the site (the home page alone unless ``follow``), and
        the data directory whose server it starts, if it does."""
        if crawler in ("crawlog", "baseline"):
            command = crawlog_command(
                "crawl", self.url + "/", "--job", "bench",
                "--workers", str(self.workers), "--concurrency", str(self.concurrency),
                "--per-host", str(self.total), "--data-dir", str(data),
                *(("--max-pages", "0") if follow else ("--depth", "0")),
            )  # fmt: skip
            return command, data
        spider = data / "site_spider.py"  # a file: Scrapy reads its callbacks' source
        if crawler == "scrapy":
            spider.write_text(SCRAPY_SPIDER if follow else SCRAPY_ONE_PAGE)
            return [sys.executable, str(spider), self.url + "/", str(self.total)], None
        assert self.crawlee is not None
        spider.write_text(CRAWLEE_SPIDER)
        args = [self.url + "/", str(self.total), "1" if follow else "0"]
        return [str(self.crawlee), str(spider), *args], None

    def run(
        self, crawler: str, *, follow: bool, sampler: ProcessSampler | None = None
    ) -> dict[str, float]:
        """One whole command: pages the site served it, wall seconds, CPU seconds."""
        before_pages = served(self.request_log)
        data = Path(tempfile.mkdtemp(prefix=f"{crawler}-", dir=self.scratch))
        command, server_dir = self.command(crawler, follow, data)
        env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
        env["CRAWLEE_STORAGE_DIR"] = str(data / "storage")
        if crawler == "baseline" and self.baseline is not None:
            env["PYTHONPATH"] = str(self.baseline)  # run from ``data``: not the cwd's code
        before = children_cpu()
        with sampler if sampler is not None else contextlib.nullcontext():
            started = time.monotonic()
            done = subprocess.run(
                command, env=env, cwd=data, capture_output=True, text=True,
                timeout=RUN_TIMEOUT_S, check=False,
            )  # fmt: skip
            wall = time.monotonic() - started
            if server_dir is not None:
                stop_server(server_dir)
            reap_orphans(self.keep)
        cpu = children_cpu() - before
        shutil.rmtree(data, ignore_errors=True)
        if done.returncode != 0:
            raise SystemExit(f"{crawler} failed (exit {done.returncode}): {done.stderr[-2000:]}")
        pages = served(self.request_log) - before_pages
        return {"pages": pages, "wall_s": wall, "cpu_s": cpu}


def one_round(
    bench: Bench, crawlers: list[str], r: int, sitemap: SiteMap
) -> tuple[dict[str, dict[str, float]], float, dict[str, float]]:
    """Every crawler's crawl and one-page crawl, in an order rotated by ``r``; the parse
    baseline (CPU seconds a page); crawlog's CPU by process."""
    order = crawlers[r % len(crawlers) :] + crawlers[: r % len(crawlers)]
    figures: dict[str, dict[str, float]] = {}
    by_process: dict[str, float] = {}
    parse_cpu, parsed, _, _ = parse_resolve_cpu(sitemap)
    for crawler in order:
        # Every crawl is sampled, crawlog's figures kept: the sampler's thread reads /proc
        # every few ms beside the crawl, which slowed the walls of the crawls it watched
        # alone (crawlog's, not the baseline's: longer in 17 of 20 rounds of two A/B runs).
        sampler = ProcessSampler(bench.keep)
        whole = bench.run(crawler, follow=True, sampler=sampler)
        one = bench.run(crawler, follow=False)
        if crawler == "crawlog":
            by_process = sampler.by_name()
        pages = max(1.0, whole["pages"] - one["pages"])
        figures[crawler] = {
            **whole,
            "pages_per_s": whole["pages"] / whole["wall_s"],
            "one_page_cpu_s": one["cpu_s"],
            "one_page_wall_s": one["wall_s"],
            "marginal_ms": 1000 * (whole["cpu_s"] - one["cpu_s"]) / pages,
        }
    return figures, parse_cpu / parsed, by_process


def marginal_noise_ms(one_page_cpu_s: list[float], pages: float) -> float:
    """The noise of a marginal figure, ms a page: how much the one-page crawl's CPU, taken
    out of each round's, varied over the rounds (0 with one round), spread over the pages."""
    return 1000 * (max(one_page_cpu_s) - min(one_page_cpu_s)) / max(1.0, pages)


def below_noise(marginal_ms: float, noise_ms: float) -> bool:
    """Whether a marginal figure is no figure: a difference of two crawls' CPU no larger
    than its noise (a short or loaded run can make it come out below 0)."""
    return marginal_ms <= noise_ms


def shown_marginal(marginal_ms: float, noise_ms: float) -> str:
    """A marginal figure as printed: never a negative number."""
    if below_noise(marginal_ms, noise_ms):
        return f"below its noise ({noise_ms:.2f})"
    return f"{marginal_ms:.2f}"


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def run_layout(
    args: argparse.Namespace, layout: str, pages: int, crawlers: list[str], crawlee: Path | None
) -> dict[str, Any]:
    """Every round of one layout: each crawler's figures (median, min, max), the ratios."""
    with tempfile.TemporaryDirectory(prefix="crawlog-peers-") as tmp:
        request_log = Path(tmp) / "requests.jsonl"
        site, url = start_site(pages, request_log, layout)
        try:
            bench = Bench(args, url, request_log, Path(tmp))
            bench.crawlee, bench.keep = crawlee, {site.pid}
            sitemap = SiteMap(pages, origin=url, layout=layout)  # type: ignore[arg-type]
            rounds = []
            for r in range(args.rounds):
                rounds.append(one_round(bench, crawlers, r, sitemap))
                figures = rounds[-1][0]
                shown = ", ".join(
                    f"{c} {f['pages']:.0f} pages {f['wall_s']:.2f} s {f['cpu_s']:.2f} s CPU "
                    f"({shown_marginal(f['marginal_ms'], 0.0)} ms/page marginal)"
                    for c, f in figures.items()
                )
                print(
                    f"  {layout} round {r + 1}: {shown}; parse {1000 * rounds[-1][1]:.3f} ms/page"
                )
        finally:
            site.terminate()
            site.wait()
    return summarize(rounds, crawlers)


def summarize(
    rounds: list[tuple[dict[str, dict[str, float]], float, dict[str, float]]],
    crawlers: list[str],
) -> dict[str, Any]:
    """Medians and spreads of a layout's rounds; vs the best peer and vs the parse are
    taken round by round."""
    result: dict[str, Any] = {"crawlers": {}}
    for crawler in crawlers:
        result["crawlers"][crawler] = {
            name: _spread([figures[crawler][name] for figures, _, _ in rounds])
            for name in rounds[0][0][crawler]
        }
    peers = [c for c in crawlers if c in PEERS]
    if peers:
        ratios = [
            f["crawlog"]["pages_per_s"] / max(f[p]["pages_per_s"] for p in peers)
            for f, _, _ in rounds
        ]
        result["vs_best_peer"] = _spread(ratios)
        medians = {p: result["crawlers"][p]["pages_per_s"]["median"] for p in peers}
        result["best_peer"] = max(medians, key=lambda p: medians[p])
    result["parse_ms_per_page"] = _spread([1000 * parse for _, parse, _ in rounds])
    result["marginal_vs_parse"] = _spread(
        [f["crawlog"]["marginal_ms"] / (1000 * parse) for f, parse, _ in rounds]
    )
    ours = result["crawlers"]["crawlog"]
    result["marginal_noise_ms"] = marginal_noise_ms(
        [f["crawlog"]["one_page_cpu_s"] for f, _, _ in rounds], ours["pages"]["median"]
    )
    names = sorted({name for _, _, by in rounds for name in by})
    result["crawlog_cpu_by_process"] = {
        name: round(statistics.median(by.get(name, 0.0) for _, _, by in rounds), 3)
        for name in names
    }
    return result


def load() -> float:
    return os.getloadavg()[0]


def print_table(layout: str, result: dict[str, Any]) -> None:
    target_ratio, target_marginal = TARGETS[layout]
    print(f"\n{layout:<10} {'pages':>6} {'pages/s':>9} {'wall s':>7} {'CPU s':>7} "
          f"{'1-page CPU':>10} {'marginal ms/page':>17}   (medians, min-max)")  # fmt: skip
    for crawler, f in result["crawlers"].items():
        spread = f"{f['pages_per_s']['min']:,.0f}-{f['pages_per_s']['max']:,.0f} pages/s"
        print(
            f"{crawler:<10} {f['pages']['median']:>6.0f} {f['pages_per_s']['median']:>9,.0f} "
            f"{f['wall_s']['median']:>7.2f} {f['cpu_s']['median']:>7.2f} "
            f"{f['one_page_cpu_s']['median']:>10.2f} {f['marginal_ms']['median']:>17.2f}   "
            f"({spread}; marginal {f['marginal_ms']['min']:.2f}-{f['marginal_ms']['max']:.2f})"
        )  # the per-crawler table keeps the raw figures; crawlog's verdict is below
    parse = result["parse_ms_per_page"]
    print(f"{'parse':<10} {'':>6} {'':>9} {'':>7} {'':>7} {'':>10} {parse['median']:>17.2f}")
    if "vs_best_peer" in result:
        vs = result["vs_best_peer"]
        print(f"crawlog vs best peer ({result['best_peer']}): {vs['median']:.2f} "
              f"({vs['min']:.2f}-{vs['max']:.2f}; target >= {target_ratio})")  # fmt: skip
    mvp = result["marginal_vs_parse"]
    marginal = result["crawlers"]["crawlog"]["marginal_ms"]["median"]
    target = (
        f"target <= {target_marginal} ms" if layout == "docs" else f"target <= {target_marginal}x"
    )
    noise = result["marginal_noise_ms"]
    if below_noise(marginal, noise):
        print(
            f"crawlog marginal: below its noise ({marginal:.2f} ms/page against the one-page "
            f"crawl's spread of {noise:.2f} ms/page): no figure; run more rounds or pages"
        )
    else:
        print(f"crawlog marginal {marginal:.2f} ms/page = {mvp['median']:.2f}x the parse "
              f"({mvp['min']:.2f}-{mvp['max']:.2f}; {target}; noise {noise:.2f})")  # fmt: skip
    parts = ", ".join(f"{k} {v:.2f}" for k, v in result["crawlog_cpu_by_process"].items())
    print(f"crawlog CPU by process: {parts}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--docs-pages", type=int, default=None)
    parser.add_argument("--link-dense-pages", type=int, default=None)
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
    parser.add_argument("--peers", default=",".join(PEERS), help="of scrapy,crawlee; '' none")
    parser.add_argument("--crawlee-venv", type=Path, default=CRAWLEE_VENV)
    parser.add_argument("--layouts", default="docs,link-dense")
    parser.add_argument(
        "--baseline", type=Path, default=None, help="other crawlog code to alternate with"
    )
    parser.add_argument("--quick", action="store_true", help="one round of small sites")
    args = parser.parse_args()
    args.rounds = args.rounds or (1 if args.quick else ROUNDS)
    docs_pages = args.docs_pages or (QUICK_DOCS_PAGES if args.quick else DOCS_PAGES)
    dense_pages = args.link_dense_pages or (
        QUICK_LINK_DENSE_PAGES if args.quick else LINK_DENSE_PAGES
    )
    peers = [p for p in args.peers.split(",") if p]
    if unknown := set(peers) - set(PEERS):
        raise SystemExit(f"unknown peers {sorted(unknown)}: pick from {', '.join(PEERS)}")
    if "scrapy" in peers:
        try:
            import scrapy  # noqa: F401
        except ImportError:
            print("no Scrapy (pip install -e '.[bench]'): going on without it", file=sys.stderr)
            peers.remove("scrapy")
    crawlee, crawlee_version = None, None
    if "crawlee" in peers:
        crawlee, crawlee_version = crawlee_python(args.crawlee_venv)
        if crawlee is None:
            print(f"no Crawlee ({crawlee_version}): going on without it", file=sys.stderr)
            peers.remove("crawlee")
    compile_checkout()
    if args.baseline is not None:
        args.baseline = args.baseline.resolve()
        compile_tree(args.baseline)
    become_subreaper()
    load_before = load()
    summary: dict[str, Any] = {
        "rounds": args.rounds, "workers": args.workers, "concurrency": args.concurrency,
        "peers": peers, "crawlee": crawlee_version if crawlee else None,
    }  # fmt: skip
    pages = {"docs": docs_pages, "link-dense": dense_pages}
    results = {}
    for layout in args.layouts.split(","):
        ours = ["crawlog", "baseline"] if args.baseline is not None else ["crawlog"]
        results[layout] = run_layout(args, layout, pages[layout], [*ours, *peers], crawlee)
    for layout, result in results.items():
        print_table(layout, result)
    summary.update(figures(results, pages))
    summary["load_before"], summary["load_after"] = round(load_before, 2), round(load(), 2)
    print(f"\nload average (1 min): {load_before:.2f} before, {load():.2f} after")
    print(json.dumps(summary))
    return 0


def figures(results: dict[str, dict[str, Any]], pages: dict[str, int]) -> dict[str, Any]:
    """The last line's figures: medians, with their spreads, by layout."""
    out: dict[str, Any] = {}
    for layout, result in results.items():
        key = "docs" if layout == "docs" else "linkdense"
        crawlog = result["crawlers"]["crawlog"]
        vs = result.get("vs_best_peer")
        marginal = crawlog["marginal_ms"]["median"]
        noise = result["marginal_noise_ms"]
        figure = not below_noise(marginal, noise)
        out |= {
            f"{key}_pages": pages[layout],
            f"{key}_vs_best_peer": round(vs["median"], 3) if vs else None,
            f"{key}_vs_best_peer_spread": [round(vs["min"], 3), round(vs["max"], 3)]
            if vs
            else None,
            f"{key}_best_peer": result.get("best_peer"),
            # None: below its noise (`below_noise`), no figure.
            f"{key}_marginal_cpu_ms_per_page": round(marginal, 3) if figure else None,
            f"{key}_marginal_noise_ms_per_page": round(noise, 3),
            f"{key}_marginal_cpu_ms_spread": [
                round(crawlog["marginal_ms"]["min"], 3),
                round(crawlog["marginal_ms"]["max"], 3),
            ],
            f"{key}_parse_ms_per_page": round(result["parse_ms_per_page"]["median"], 3),
            f"{key}_marginal_vs_parse": round(result["marginal_vs_parse"]["median"], 3)
            if figure
            else None,
            f"{key}_crawlog_cpu_by_process": result["crawlog_cpu_by_process"],
        }
        for crawler, f in result["crawlers"].items():
            for name in ("pages_per_s", "wall_s", "cpu_s", "one_page_cpu_s", "marginal_ms"):
                out[f"{key}_{crawler}_{name}"] = round(f[name]["median"], 3)
    return out


if __name__ == "__main__":
    sys.exit(main())
