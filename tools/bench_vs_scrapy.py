"""crawlog against Scrapy on the same generated site, at the same total concurrency.

    python tools/bench_vs_scrapy.py [--pages N] [--workers W] [--concurrency C] [--rounds R]

Starts ``crawlog testsite`` as its own process (N pages, default 2,000), then, alternating
in each round, crawls it completely with Scrapy (one process; CONCURRENT_REQUESTS = W x C;
every in-site link followed with its LinkExtractor; an item per page) and with
``crawlog crawl`` (W worker processes x C fetches, the projector, the default spider; a
fresh job and data directory per round, on a private valkey-server). Both obey
robots.txt, both have no per-host delay. Pages/s is pages fetched over the command's wall
time (process start to exit, so both pay their start-up).

Each round also crawls with the event log swapped for a no-op sink (``crawl --no-events``:
the workers lease, fetch, parse and enqueue exactly as before, but append no task events),
to show what the log costs. The crawlog runs count the pages the site served them (its
request log), so the no-op run, which has no log to count from, is measured the same way.

Needs Scrapy: ``pip install -e '.[bench]'``. Prints a table; the last line is one JSON object
with ``scrapy_pages_per_s``, ``crawlog_pages_per_s``, ``vs_scrapy``, ``nolog_pages_per_s``
and ``log_overhead`` (crawlog / no-op; 1.0 = the log costs nothing).

``--spider-style scrapy`` crawls instead with a spider written the Scrapy way on both
sides: an item of fields per page with ``response.css("title::text").get()``, and
``response.follow_all(css="a")`` for the links (Scrapy's off-site filter, crawlog's scope);
its JSON has ``scrapy_selectors_pages_per_s``, ``crawlog_selectors_pages_per_s`` and
``vs_scrapy_selectors`` (the issue's target: >= 3).

``--link-dense`` crawls the test site's link-dense layout instead (``crawlog testsite
--layout link-dense``, ``--pages`` documentation pages, default 500: ~100 KB each with
hundreds of links, indexes with thousands, the same navigation on every page), with the
default spiders, Scrapy and crawlog at the same per-host concurrency (``--per-host``,
default W x C: Scrapy's CONCURRENT_REQUESTS and CONCURRENT_REQUESTS_PER_DOMAIN, crawlog's
``--per-host``). Besides pages/s it measures CPU: the crawl's total (the ``crawl`` command
and every process it starts, from ``getrusage(RUSAGE_CHILDREN)``, plus the job's
valkey-server, from ``/proc``), and what parsing the site's pages and resolving their links
costs at the least (in this process, with the worker's parser: every page parsed once, each
distinct pair of an href and the part of its base it depends on resolved once). Its JSON
has ``vs_scrapy_link_dense`` (target >= 6), ``link_dense_crawl_cpu_s``,
``link_dense_parse_cpu_s`` and ``link_dense_cpu_ratio`` (crawl / parse, target <= 2.5;
the parse is measured again in each round, just before its crawl, and the ratio is taken
round by round), medians of the rounds, and their spreads; and
``link_dense_cpu_by_process`` (the medians per process).

The crawl's total counts every process of it: this process is its child subreaper
(``PR_SET_CHILD_SUBREAPER``), so one that outlives its parent (the projector's segment
writer, were the projector to exit first) is reaped here, and counted, rather than by
init. Each round also samples the crawl's processes from ``/proc`` while it runs and
prints where the CPU went, process by process (``crawl``, ``crawlog-w1``...,
``crawlog-project``, ``segment-writer``, ``valkey-server``; a process's last few
milliseconds are missed by the sampling, not by the total).

Before the rounds the checkout's bytecode is written (``compileall``, as
``tools/bench_tiny_crawl.py`` does): with ``PYTHONDONTWRITEBYTECODE`` set, every process of
every crawl compiled crawlog's modules again, which an installed crawlog never does.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections import defaultdict
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser
from yarl import URL

from crawler import BASE_PARTS, base_key, base_part, clean_href, join_href
from crawler.cli import crawlog_command
from crawler.testsite import FLUSH_INTERVAL_S, SiteMap, read_request_log
from eventlog import ensure_server, stop_server

DEFAULT_PAGES = 2_000
DEFAULT_WORKERS = 2
DEFAULT_CONCURRENCY = 16
ROUNDS = 3
LINK_DENSE_PAGES = 500
PARSE_RUNS = 3
"""The parse + resolve measure is taken this many times before the rounds, for the site's
figures; the baseline is the one taken in each round, just before its crawl."""
PR_SET_CHILD_SUBREAPER = 36
SAMPLE_S = 0.005
"""How often the crawl's processes are sampled for the per-process figures."""
ORPHANS_WAIT_S = 10.0
PACKAGES = ("crawler", "eventlog", "projector")

SCRAPY_SPIDER = textwrap.dedent(
    """
    import sys
    from urllib.parse import urlsplit
    import scrapy
    from scrapy.crawler import CrawlerProcess
    from scrapy.linkextractors import LinkExtractor

    START, CONCURRENCY = sys.argv[1], int(sys.argv[2])
    HOST = urlsplit(START).netloc

    class Site(scrapy.Spider):
        name = "site"
        start_urls = [START]
        links = LinkExtractor()

        def parse(self, response):
            yield {"url": response.url, "status": response.status,
                   "title": response.css("title::text").get(), "bytes": len(response.body)}
            for link in self.links.extract_links(response):
                if urlsplit(link.url).netloc == HOST:
                    yield response.follow(link.url, self.parse)

    pages = 0
    def count(item, response, spider):
        global pages
        pages += 1

    process = CrawlerProcess({
        "LOG_LEVEL": "ERROR", "ROBOTSTXT_OBEY": True, "CONCURRENT_REQUESTS": CONCURRENCY,
        "CONCURRENT_REQUESTS_PER_DOMAIN": CONCURRENCY, "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False, "TELNETCONSOLE_ENABLED": False,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    })
    crawler = process.create_crawler(Site)
    crawler.signals.connect(count, signal=scrapy.signals.item_scraped)
    process.crawl(crawler)
    process.start()
    print(pages)
    """
)


SCRAPY_SELECTOR_SPIDER = SCRAPY_SPIDER.replace(
    "    links = LinkExtractor()\n",
    "    allowed_domains = [urlsplit(START).hostname]\n",
).replace(
    """    for link in self.links.extract_links(response):
            if urlsplit(link.url).netloc == HOST:
                yield response.follow(link.url, self.parse)
""",
    "    yield from response.follow_all(css='a', callback=self.parse)\n",
)
assert SCRAPY_SELECTOR_SPIDER != SCRAPY_SPIDER
CRAWLOG_SELECTOR_SPIDER = textwrap.dedent(
    """
    from crawler import Spider

    class Site(Spider):
        name = "site"
        content_types = ("text/html",)

        async def parse(self, response):
            yield {"url": response.url, "status": response.status,
                   "title": response.css("title::text").get(), "bytes": len(response.body)}
            for follow in response.follow_all(css="a"):
                yield follow
    """
)
SPIDER_STYLES = ("default", "scrapy")


def start_site(
    pages: int, request_log: Path, layout: str = "default"
) -> tuple[subprocess.Popen[str], str]:
    command = crawlog_command(
        "testsite", "--port", "0", "--pages", str(pages),
        "--request-log", str(request_log), "--layout", layout,
    )  # fmt: skip
    site = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert site.stdout is not None
    line = site.stdout.readline()
    if not line.startswith("serving "):
        site.kill()
        raise SystemExit(f"the test site did not start: {line!r}")
    return site, line.split()[1]


def children_cpu() -> float:
    """User + system CPU seconds of every child process waited for so far (and theirs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_cpu(pid: int) -> float:
    """User + system CPU seconds a running process has used, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def compile_checkout() -> None:
    """Write the bytecode of the crawlog checkout this runs (whose ``crawlog_command``
    the crawls run), as an installed crawlog has it."""
    import crawler

    root = Path(crawler.__file__).resolve().parent.parent
    command = [sys.executable, "-m", "compileall", "-q", *PACKAGES]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(command, cwd=root, env=env, capture_output=True, check=True)


def become_subreaper() -> None:
    """Orphaned descendants are reparented to this process (Linux), so that their CPU is
    counted in ``RUSAGE_CHILDREN`` once `reap_orphans` has reaped them."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            text = Path(f"/proc/{pid}/task/{task}/children").read_text()
            found += [int(child) for child in text.split()]
    return found


def reap_orphans(keep: set[int]) -> None:
    """Wait for the children of this process that are not in ``keep`` (orphans of a crawl)
    to exit, and reap them."""
    deadline = time.monotonic() + ORPHANS_WAIT_S
    # Reaped as they exit: a zombie stays listed among the children until it is.
    while _reap_exited() and [p for p in _children(os.getpid()) if p not in keep]:
        if time.monotonic() >= deadline:
            return
        time.sleep(0.01)


def _reap_exited() -> bool:
    """Reap every child that has exited; False once there are no children at all."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def _name_of(pid: int) -> tuple[str, float] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    name = raw[raw.index("(") + 1 : raw.rindex(")")] if cmdline else ""
    if b"projector._writer" in cmdline:
        name = "segment-writer"
    elif b"crawler.cli\x00crawl\x00" in cmdline and not name.startswith("crawlog-"):
        name = "crawl"
    fields = raw.rpartition(")")[2].split()
    return name, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ProcessSampler:
    """Samples the CPU of every process under this one but ``keep`` (the site, the
    server) from /proc while it runs: each one's latest figure, by pid."""

    def __init__(self, keep: set[int]) -> None:
        self.keep = keep
        self.seen: dict[int, tuple[str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ProcessSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            stack = [p for p in _children(os.getpid()) if p not in self.keep]
            while stack:
                pid = stack.pop()
                if (found := _name_of(pid)) is not None:
                    # Named by its latest sample with a command line: an exited process's
                    # reads empty (and a child is sampled before its exec or rename too).
                    known = self.seen.get(pid)
                    named = found[0] if found[0] or known is None else known[0]
                    self.seen[pid] = (named, found[1])
                stack += _children(pid)
            time.sleep(SAMPLE_S)

    def by_name(self) -> dict[str, float]:
        """CPU seconds by process name (``crawlog-w1``, ...), summed over its pids."""
        cpu: dict[str, float] = defaultdict(float)
        for name, seconds in self.seen.values():
            cpu[name or "?"] += seconds
        return dict(cpu)


def run_scrapy(url: str, concurrency: int, source: str = SCRAPY_SPIDER) -> tuple[int, float]:
    # A file, not ``python -c``: Scrapy reads its callbacks' source (inspect.getsource).
    with tempfile.TemporaryDirectory(prefix="crawlog-bench-") as tmp:
        spider = Path(tmp) / "site_spider.py"
        spider.write_text(source)
        started = time.monotonic()
        out = subprocess.run(
            [sys.executable, str(spider), url + "/", str(concurrency)],
            capture_output=True,
            text=True,
            check=True,
        )
        elapsed = time.monotonic() - started
    return int(out.stdout.strip().splitlines()[-1]), elapsed


def served(request_log: Path) -> int:
    """Pages the site has served so far (robots.txt not counted)."""
    # The site flushes its log every FLUSH_INTERVAL_S: wait for the last batch.
    time.sleep(FLUSH_INTERVAL_S * 3)
    return sum(1 for r in read_request_log(request_log) if r.path != "/robots.txt")


def run_crawlog(
    url: str,
    redis_url: str,
    workers: int,
    concurrency: int,
    request_log: Path,
    *,
    events: bool,
    spider: str | None = None,
    per_host: int | None = None,
    sampler: ProcessSampler | None = None,
) -> tuple[int, float]:
    """Pages the site served to one ``crawlog crawl`` (of ``spider``'s source, else the
    default spider), and its wall time; with ``sampler``, its processes sampled meanwhile,
    and every orphan it left reaped before it returns."""
    before = served(request_log)
    with tempfile.TemporaryDirectory(prefix="crawlog-bench-") as data:
        job = f"bench-{time.time_ns()}"
        spider_args: tuple[str, ...] = ()
        if spider is not None:
            (Path(data) / "site_spider.py").write_text(spider)
            spider_args = ("--spider", f"{Path(data) / 'site_spider.py'}:Site")
        command = crawlog_command(
            "crawl", url + "/", "--job", job, *spider_args,
            "--workers", str(workers), "--concurrency", str(concurrency),
            "--per-host", str(workers * concurrency if per_host is None else per_host),
            "--data-dir", data, "--max-pages", "0",  # unbounded, as Scrapy is
            # Without events nothing is seen done: the no-op run must not fail for it.
            *(() if events else ("--no-events", "--fail-on", "never")),
        )  # fmt: skip
        env = {**os.environ, "REDIS_URL": redis_url}
        with sampler or contextlib.nullcontext():
            started = time.monotonic()
            subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            elapsed = time.monotonic() - started
            if sampler is not None:
                reap_orphans(sampler.keep)
    return served(request_log) - before, elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES)
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--spider-style", choices=SPIDER_STYLES, default="default")
    parser.add_argument("--link-dense", action="store_true")
    parser.add_argument("--per-host", type=int, default=None)
    args = parser.parse_args()
    try:
        import scrapy  # noqa: F401
    except ImportError:
        raise SystemExit("this benchmark needs Scrapy: pip install -e '.[bench]'") from None
    total = args.workers * args.concurrency
    compile_checkout()
    if args.link_dense:
        return _link_dense(args, total if args.per_host is None else args.per_host)
    with tempfile.TemporaryDirectory(prefix="crawlog-bench-") as tmp:
        request_log = Path(tmp) / "requests.jsonl"
        site, url = start_site(args.pages, request_log)
        redis_url = ensure_server(Path(tmp) / "server").url
        crawl = (url, redis_url, args.workers, args.concurrency, request_log)
        if args.spider_style == "scrapy":
            try:
                return _selectors(args.pages, args.rounds, total, crawl)
            finally:
                stop_server(Path(tmp) / "server")
                site.terminate()
                site.wait()
        try:
            scrapy_rates, crawlog_rates, nolog_rates = [], [], []
            for r in range(args.rounds):
                pages, seconds = run_scrapy(url, total)
                scrapy_rates.append(pages / seconds)
                pages_c, seconds_c = run_crawlog(*crawl, events=True)
                crawlog_rates.append(pages_c / seconds_c)
                pages_n, seconds_n = run_crawlog(*crawl, events=False)
                nolog_rates.append(pages_n / seconds_n)
                print(
                    f"  round {r + 1}: scrapy {pages} pages in {seconds:.1f} s, "
                    f"crawlog {pages_c} pages in {seconds_c:.1f} s, "
                    f"no-op log {pages_n} pages in {seconds_n:.1f} s"
                )
        finally:
            stop_server(Path(tmp) / "server")
            site.terminate()
            site.wait()
    result = {
        "pages": args.pages,
        "total_concurrency": total,
        "scrapy_pages_per_s": statistics.median(scrapy_rates),
        "crawlog_pages_per_s": statistics.median(crawlog_rates),
    }
    result["vs_scrapy"] = result["crawlog_pages_per_s"] / result["scrapy_pages_per_s"]
    result["nolog_pages_per_s"] = statistics.median(nolog_rates)
    result["log_overhead"] = result["crawlog_pages_per_s"] / result["nolog_pages_per_s"]
    print(f"\n{'crawler':<10} {'pages/s':>10}   ({args.workers} x {args.concurrency} vs {total})")
    print(f"{'scrapy':<10} {result['scrapy_pages_per_s']:>10,.0f}")
    ratio = f"{result['vs_scrapy']:.2f} x scrapy (target >= 3)"
    print(f"{'crawlog':<10} {result['crawlog_pages_per_s']:>10,.0f}   {ratio}")
    overhead = f"crawlog / no-op = {result['log_overhead']:.2f} (target >= 0.9)"
    print(f"{'no-op log':<10} {result['nolog_pages_per_s']:>10,.0f}   {overhead}")
    print(json.dumps({k: round(v, 3) for k, v in result.items()}))
    return 0


def _selectors(pages: int, rounds: int, total: int, crawl: tuple[str, str, int, int, Path]) -> int:
    """``--spider-style scrapy``: the same selector spider in Scrapy and in crawlog."""
    scrapy_rates, crawlog_rates = [], []
    url = crawl[0]
    for r in range(rounds):
        pages_s, seconds_s = run_scrapy(url, total, SCRAPY_SELECTOR_SPIDER)
        scrapy_rates.append(pages_s / seconds_s)
        pages_c, seconds_c = run_crawlog(*crawl, events=True, spider=CRAWLOG_SELECTOR_SPIDER)
        crawlog_rates.append(pages_c / seconds_c)
        print(
            f"  round {r + 1}: scrapy {pages_s} pages in {seconds_s:.1f} s, "
            f"crawlog {pages_c} pages in {seconds_c:.1f} s (css + follow_all)"
        )
    result = {
        "pages": pages,
        "total_concurrency": total,
        "scrapy_selectors_pages_per_s": statistics.median(scrapy_rates),
        "crawlog_selectors_pages_per_s": statistics.median(crawlog_rates),
    }
    result["vs_scrapy_selectors"] = (
        result["crawlog_selectors_pages_per_s"] / result["scrapy_selectors_pages_per_s"]
    )
    print(f"\n{'crawler':<10} {'pages/s':>10}   (selector spiders, {total} in flight)")
    print(f"{'scrapy':<10} {result['scrapy_selectors_pages_per_s']:>10,.0f}")
    ratio = f"{result['vs_scrapy_selectors']:.2f} x scrapy (target >= 3)"
    print(f"{'crawlog':<10} {result['crawlog_selectors_pages_per_s']:>10,.0f}   {ratio}")
    print(json.dumps({k: round(v, 3) for k, v in result.items()}))
    return 0


def parse_resolve_cpu(sitemap: SiteMap) -> tuple[float, int, int, int]:
    """CPU seconds of parsing every page of ``sitemap`` with the worker's parser (decoded
    with the charset the site sends, as the worker does) and resolving each distinct pair
    of a (cleaned, fragment-free) href and the part of its base it depends on once; with
    the pages, hrefs and distinct pairs counted. The pages are rendered before the clock
    starts: serving them is the site's cost, not the crawl's."""
    pages = [(sitemap.origin + path, sitemap.render(path)) for path in sorted(sitemap.pages_ok)]
    bodies = [(url, page.body) for url, page in pages if page is not None]
    started = time.process_time()
    resolved: dict[tuple[str, str], str | None] = {}
    hrefs = 0
    for url, body in bodies:
        tree = LexborHTMLParser(body.decode("utf-8", errors="replace"))
        base = URL(url)
        parts = {part: base_key(base, part) for part in BASE_PARTS}
        for node in tree.css("a[href]"):
            href = clean_href(node.attrs.get("href") or "").partition("#")[0]
            key = (parts[base_part(href)], href)
            hrefs += 1
            if key not in resolved:
                resolved[key] = join_href(href, base)
    return time.process_time() - started, len(bodies), hrefs, len(resolved)


def _link_dense(args: argparse.Namespace, per_host: int) -> int:
    """``--link-dense``: both default spiders on the link-dense site, pages/s and CPU."""
    pages = args.pages if args.pages != DEFAULT_PAGES else LINK_DENSE_PAGES
    with tempfile.TemporaryDirectory(prefix="crawlog-bench-") as tmp:
        request_log = Path(tmp) / "requests.jsonl"
        site, url = start_site(pages, request_log, "link-dense")
        server = ensure_server(Path(tmp) / "server")
        become_subreaper()
        try:
            sitemap = SiteMap(pages, origin=url, layout="link-dense")
            parse_runs = [parse_resolve_cpu(sitemap) for _ in range(PARSE_RUNS)]
            _, site_pages, hrefs, pairs = parse_runs[0]
            print(
                f"  the site: {site_pages} pages, {hrefs:,} hrefs, {pairs:,} distinct pairs; "
                f"parse + resolve {statistics.median(run[0] for run in parse_runs):.2f} s CPU "
                f"({', '.join(f'{run[0]:.2f}' for run in parse_runs)})"
            )
            scrapy_rates, crawlog_rates, scrapy_cpus, crawl_cpus = [], [], [], []
            parse_cpus: list[float] = []
            by_process: list[dict[str, float]] = []
            for r in range(args.rounds):
                before = children_cpu()
                pages_s, seconds_s = run_scrapy(url, per_host)
                scrapy_cpus.append(children_cpu() - before)
                scrapy_rates.append(pages_s / seconds_s)
                # Measured next to the crawl it is the baseline of: the machine's speed
                # drifts over a run, and the ratio is taken round by round.
                parse_cpus.append(parse_resolve_cpu(sitemap)[0])
                before, server_before = children_cpu(), process_cpu(server.pid)
                sampler = ProcessSampler({site.pid, server.pid})
                pages_c, seconds_c = run_crawlog(
                    url, server.url, args.workers, args.concurrency, request_log,
                    events=True, per_host=per_host, sampler=sampler,
                )  # fmt: skip
                server_cpu = process_cpu(server.pid) - server_before
                crawl_cpus.append(children_cpu() - before + server_cpu)
                by_process.append({**sampler.by_name(), "valkey-server": server_cpu})
                crawlog_rates.append(pages_c / seconds_c)
                print(
                    f"  round {r + 1}: scrapy {pages_s} pages in {seconds_s:.2f} s "
                    f"({scrapy_cpus[-1]:.2f} s CPU), crawlog {pages_c} pages in "
                    f"{seconds_c:.2f} s ({crawl_cpus[-1]:.2f} s CPU, "
                    f"{server_cpu:.2f} s of it valkey-server's); parse {parse_cpus[-1]:.2f} s"
                )
                parts = ", ".join(f"{k} {v:.2f}" for k, v in sorted(by_process[-1].items()))
                print(f"           by process: {parts}")
        finally:
            stop_server(Path(tmp) / "server")
            site.terminate()
            site.wait()
    ratios = [c / s for c, s in zip(crawlog_rates, scrapy_rates, strict=True)]
    cpu_ratios = [cpu / parse for cpu, parse in zip(crawl_cpus, parse_cpus, strict=True)]
    parse_cpu = statistics.median(parse_cpus)
    result: dict[str, float] = {
        "link_dense_pages": site_pages,
        "per_host": per_host,
        "scrapy_link_dense_pages_per_s": statistics.median(scrapy_rates),
        "crawlog_link_dense_pages_per_s": statistics.median(crawlog_rates),
        "vs_scrapy_link_dense": statistics.median(ratios),
        "vs_scrapy_link_dense_min": min(ratios),
        "vs_scrapy_link_dense_max": max(ratios),
        "scrapy_link_dense_cpu_s": statistics.median(scrapy_cpus),
        "link_dense_crawl_cpu_s": statistics.median(crawl_cpus),
        "link_dense_crawl_cpu_min_s": min(crawl_cpus),
        "link_dense_crawl_cpu_max_s": max(crawl_cpus),
        "link_dense_parse_cpu_s": parse_cpu,
        "link_dense_cpu_ratio": statistics.median(cpu_ratios),
    }
    names = sorted({name for sample in by_process for name in sample})
    per_process = {
        name: round(statistics.median(s.get(name, 0.0) for s in by_process), 3) for name in names
    }
    print(f"\n{'link-dense':<10} {'pages/s':>10} {'CPU s':>8}   (per host {per_host}, medians)")
    print(
        f"{'scrapy':<10} {result['scrapy_link_dense_pages_per_s']:>10,.0f} "
        f"{result['scrapy_link_dense_cpu_s']:>8.2f}"
    )
    print(
        f"{'crawlog':<10} {result['crawlog_link_dense_pages_per_s']:>10,.0f} "
        f"{result['link_dense_crawl_cpu_s']:>8.2f}   "
        f"{result['vs_scrapy_link_dense']:.2f} x scrapy "
        f"({min(ratios):.2f}-{max(ratios):.2f}; target >= 6)"
    )
    print(
        f"{'parse':<10} {'':>10} {parse_cpu:>8.2f}   crawl CPU / parse CPU = "
        f"{result['link_dense_cpu_ratio']:.2f} ({min(cpu_ratios):.2f}-{max(cpu_ratios):.2f}; "
        "target <= 2.5)"
    )
    print(f"{'by process':<10} " + ", ".join(f"{k} {v:.2f}" for k, v in per_process.items()))
    print(
        json.dumps(
            {
                **{k: round(v, 3) for k, v in result.items()},
                "link_dense_cpu_by_process": per_process,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
