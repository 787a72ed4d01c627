"""Benchmark of HTTP transports for the fetcher, against the test site in another process.

    python tools/bench_fetch.py [--quick] [--requests N] [--rounds R] [--concurrency 5,50,200]

Starts ``crawlog testsite`` as a separate process (server and client share neither a GIL
nor, on two cores, a core) and GETs its detail pages of about 10 KiB over keep-alive, with
C requests in flight through one client per measurement:

  httpx (httpcore)        httpx.AsyncClient with its default transport
  httpx + httpx-aiohttp   httpx.AsyncClient over the httpx-aiohttp package's transport
  httpx + crawlog         httpx.AsyncClient over crawler._fetch.AiohttpTransport (chosen)
  aiohttp                 aiohttp.ClientSession alone: what the httpx layer costs
  crawlog fetcher         Fetcher.fetch: the chosen transport plus the fetcher's own work
  raw asyncio             HTTP/1.1 written and parsed by hand: the loop's and server's ceiling

Each measurement is N requests or MAX_SECONDS, whichever ends first; each figure is the
median of R rounds, and within a round the cases take turns, so that a busy machine slows
them alike. Besides requests/s it prints the client's CPU time per request (the server's
excluded), which is steadier than the rate when others share the machine. The last line is
one JSON object: the rates per case and concurrency, and the ratios chosen/aiohttp and
fetcher/aiohttp. httpx-aiohttp is optional (``pip install httpx-aiohttp``): without it its
row is skipped.
"""

from __future__ import annotations

import argparse
import importlib
import json
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import aiohttp
import anyio
import httpx
from anyio.streams.buffered import BufferedByteReceiveStream

from crawler import AiohttpTransport, FetchConfig, Fetcher
from crawler.cli import crawlog_command
from crawler.testsite import ITEM_PREFIX, SiteMap

PAGES = 1000
SEED = 0
PAGE_BYTES = 10 * 1024
PAGE_SLACK = 0.05
"""Pages within 5% of PAGE_BYTES are fetched, in turn."""
MAX_URLS = 16
CONCURRENCY = (5, 50, 200)
FULL_REQUESTS = 5000
QUICK_REQUESTS = 1000
ROUNDS = 3
QUICK_ROUNDS = 1
MAX_SECONDS = 5.0
"""A measurement stops after this long even if its N requests are not done (httpcore at
high concurrency would otherwise take minutes)."""
WARM_UP_PER_CONNECTION = 2
START_TIMEOUT_S = 30.0
MAX_LINE = 4096
CHOSEN = "httpx_crawlog"

Get = Callable[[str], Awaitable[int]]
"""GETs a URL and returns its body's length, or -1 for anything but a 200."""
Case = Callable[[int], AbstractAsyncContextManager[Get]]
"""Opens a client for a concurrency; the client's ``Get`` while open."""


@asynccontextmanager
async def httpx_default(concurrency: int) -> AsyncIterator[Get]:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits) as client:
        yield _httpx_get(client)


@asynccontextmanager
async def httpx_aiohttp_package(concurrency: int) -> AsyncIterator[Get]:
    package: Any = importlib.import_module("httpx_aiohttp")
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(transport=package.AiohttpTransport(limits=limits)) as client:
        yield _httpx_get(client)


@asynccontextmanager
async def httpx_crawlog(concurrency: int) -> AsyncIterator[Get]:
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=concurrency),
        cookie_jar=aiohttp.DummyCookieJar(),
        auto_decompress=False,
    )
    async with httpx.AsyncClient(transport=AiohttpTransport(session)) as client:
        yield _httpx_get(client)


def _httpx_get(client: httpx.AsyncClient) -> Get:
    async def get(url: str) -> int:
        response = await client.get(url)
        return len(response.content) if response.status_code == httpx.codes.OK else -1

    return get


@asynccontextmanager
async def aiohttp_alone(concurrency: int) -> AsyncIterator[Get]:
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def get(url: str) -> int:
            async with session.get(url) as response:
                body = await response.read()
                return len(body) if response.status == httpx.codes.OK else -1

        yield get


@asynccontextmanager
async def crawlog_fetcher(concurrency: int) -> AsyncIterator[Get]:
    async with Fetcher(FetchConfig(max_connections=concurrency)) as fetcher:

        async def get(url: str) -> int:
            result = await fetcher.fetch(url)
            ok = result.error is None and result.status == httpx.codes.OK
            return len(result.body) if ok else -1

        yield get


@asynccontextmanager
async def raw_asyncio(concurrency: int) -> AsyncIterator[Get]:
    """Keep-alive HTTP/1.1 by hand: one request line, Content-Length bodies only."""
    idle: list[tuple[BufferedByteReceiveStream, anyio.abc.SocketStream]] = []
    opened: list[anyio.abc.SocketStream] = []

    async def get(url: str) -> int:
        parsed = httpx.URL(url)
        if idle:
            reader, stream = idle.pop()
        else:
            stream = await anyio.connect_tcp(parsed.host, parsed.port or 80)
            opened.append(stream)
            reader = BufferedByteReceiveStream(stream)
        await stream.send(b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (parsed.raw_path, parsed.netloc))
        head = await reader.receive_until(b"\r\n\r\n", MAX_LINE)
        start = head.index(b"Content-Length: ") + len(b"Content-Length: ")
        length = int(head[start : head.index(b"\r\n", start)])
        body = await reader.receive_exactly(length)
        idle.append((reader, stream))
        return len(body) if head.startswith(b"HTTP/1.1 200 ") else -1

    try:
        yield get
    finally:
        for stream in opened:
            await stream.aclose()


CASES: dict[str, tuple[str, Case]] = {
    "httpx_default": ("httpx (httpcore)", httpx_default),
    "httpx_aiohttp_package": ("httpx + httpx-aiohttp", httpx_aiohttp_package),
    CHOSEN: ("httpx + crawlog transport", httpx_crawlog),
    "aiohttp": ("aiohttp", aiohttp_alone),
    "crawlog_fetcher": ("crawlog fetcher", crawlog_fetcher),
    "raw_asyncio": ("raw asyncio", raw_asyncio),
}


async def measure(
    get: Get, urls: list[str], sizes: dict[str, int], concurrency: int, requests: int
) -> tuple[float, float]:
    """Requests/s and client CPU microseconds per request, ``concurrency`` at a time."""
    await _drive(get, urls, sizes, concurrency, concurrency * WARM_UP_PER_CONNECTION)
    wall, cpu = time.perf_counter(), time.process_time()
    done = await _drive(get, urls, sizes, concurrency, requests)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return done / wall, cpu / done * 1e6


async def _drive(
    get: Get, urls: list[str], sizes: dict[str, int], concurrency: int, requests: int
) -> int:
    """Send up to ``requests`` requests (fewer after MAX_SECONDS); how many were sent."""
    numbers = iter(range(requests))
    deadline = time.perf_counter() + MAX_SECONDS
    done = 0

    async def worker() -> None:
        nonlocal done
        for number in numbers:
            url = urls[number % len(urls)]
            size = await get(url)
            if size != sizes[url]:
                raise SystemExit(f"{url}: expected {sizes[url]} bytes with a 200, got {size}")
            done += 1
            if time.perf_counter() > deadline:
                return

    async with anyio.create_task_group() as workers:
        for _ in range(concurrency):
            workers.start_soon(worker)
    return done


def pick_pages(origin: str) -> dict[str, int]:
    """URLs of the site's detail pages of about PAGE_BYTES, with their sizes."""
    sitemap = SiteMap(PAGES, SEED, origin=origin)
    low, high = PAGE_BYTES * (1 - PAGE_SLACK), PAGE_BYTES * (1 + PAGE_SLACK)
    sizes: dict[str, int] = {}
    for item in range(1, PAGES + 1):
        path = f"{ITEM_PREFIX}{item}"
        page = sitemap.render(path)
        if page is not None and low <= len(page.body) <= high:
            sizes[origin + path] = len(page.body)
            if len(sizes) == MAX_URLS:
                break
    if not sizes:
        raise SystemExit(f"no detail page of {PAGE_BYTES} bytes +-{PAGE_SLACK:.0%}")
    return sizes


@asynccontextmanager
async def testsite() -> AsyncIterator[str]:
    """``crawlog testsite`` in a process of its own; its origin while it runs."""
    command = crawlog_command("testsite", "--port", "0")
    command += ["--pages", str(PAGES), "--seed", str(SEED)]
    async with await anyio.open_process(command, stdout=subprocess.PIPE) as process:
        assert process.stdout is not None
        try:
            try:
                with anyio.fail_after(START_TIMEOUT_S):
                    line = await BufferedByteReceiveStream(process.stdout).receive_until(
                        b"\n", MAX_LINE
                    )
            except (anyio.IncompleteRead, TimeoutError):
                raise SystemExit(f"{' '.join(command)} did not start") from None
            # "serving http://127.0.0.1:PORT (N pages)"
            yield line.decode().split()[1]
        finally:
            process.send_signal(signal.SIGINT)
            await process.wait()


async def run(
    requests: int, rounds: int, concurrencies: list[int]
) -> dict[str, dict[int, tuple[float, float]]]:
    """For each case and concurrency: median requests/s and CPU microseconds per request."""
    cases = dict(CASES)
    try:
        importlib.import_module("httpx_aiohttp")
    except ImportError:
        print("httpx-aiohttp not installed: its row is skipped (pip install httpx-aiohttp)")
        del cases["httpx_aiohttp_package"]
    async with testsite() as origin:
        sizes = pick_pages(origin)
        urls = list(sizes)
        mean = statistics.mean(sizes.values())
        print(f"{len(urls)} pages of {mean:,.0f} bytes on average at {origin}; {requests:,}")
        print(f"requests or {MAX_SECONDS:.0f} s a measurement, median of {rounds} rounds\n")
        samples: dict[str, dict[int, list[tuple[float, float]]]] = {
            key: {c: [] for c in concurrencies} for key in cases
        }
        for concurrency in concurrencies:
            for round_no in range(rounds):
                for key, (_, case) in cases.items():
                    async with case(concurrency) as get:
                        sample = await measure(get, urls, sizes, concurrency, requests)
                    samples[key][concurrency].append(sample)
                    print(
                        f"  c={concurrency:<4} round {round_no + 1}  {cases[key][0]:<26}"
                        f"{sample[0]:>9,.0f} req/s {sample[1]:>7,.0f} us CPU/req",
                        flush=True,
                    )
    return {
        key: {
            c: (
                statistics.median(rate for rate, _ in runs),
                statistics.median(cpu for _, cpu in runs),
            )
            for c, runs in by_concurrency.items()
        }
        for key, by_concurrency in samples.items()
    }


def print_table(
    medians: dict[str, dict[int, tuple[float, float]]], concurrencies: list[int]
) -> None:
    head = "".join(f"{f'c={c}':>24}" for c in concurrencies)
    print(f"\n{'medians: req/s (client CPU us/req)':<36}{head}")
    for key, by_concurrency in medians.items():
        cells = "".join(
            f"{f'{rate:,.0f} ({cpu:,.0f})':>24}" for rate, cpu in by_concurrency.values()
        )
        print(f"{CASES[key][0]:<36}{cells}")
    for key in (CHOSEN, "crawlog_fetcher"):
        ratios = "".join(
            f"{medians[key][c][0] / medians['aiohttp'][c][0]:>24.2f}" for c in concurrencies
        )
        print(f"{CASES[key][0] + ' / aiohttp':<36}{ratios}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_REQUESTS:,} requests, {QUICK_ROUNDS} round"
    )
    parser.add_argument("--requests", type=int, help="requests per measurement")
    parser.add_argument("--rounds", type=int, help=f"rounds (default {ROUNDS})")
    parser.add_argument(
        "--concurrency",
        default=",".join(map(str, CONCURRENCY)),
        help="requests in flight, comma-separated",
    )
    args = parser.parse_args()
    requests = args.requests or (QUICK_REQUESTS if args.quick else FULL_REQUESTS)
    rounds = args.rounds or (QUICK_ROUNDS if args.quick else ROUNDS)
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    medians = anyio.run(run, requests, rounds, concurrencies)
    print_table(medians, concurrencies)
    summary: dict[str, Any] = {
        "requests": requests,
        "rounds": rounds,
        "req_per_s": {
            key: {str(c): round(rate) for c, (rate, _) in by.items()} for key, by in medians.items()
        },
        "cpu_us_per_req": {
            key: {str(c): round(cpu) for c, (_, cpu) in by.items()} for key, by in medians.items()
        },
        "chosen": CHOSEN,
    }
    for key, name in ((CHOSEN, "chosen"), ("crawlog_fetcher", "fetcher")):
        summary[f"ratio_{name}_vs_aiohttp"] = {
            str(c): round(medians[key][c][0] / medians["aiohttp"][c][0], 3) for c in concurrencies
        }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
