"""The raw limit of a recrawl: each page asked for again with its validator, and nothing else.

    python tools/raw_revisit.py prepare URLS_FILE VALIDATORS_FILE
    python tools/raw_revisit.py revisit VALIDATORS_FILE [--processes 2] [--concurrency 32]

``prepare`` fetches each URL of ``URLS_FILE`` (one a line) once, untimed, and writes each
page's ``ETag`` and ``Last-Modified`` to ``VALIDATORS_FILE`` (JSON). ``revisit`` asks for
every page again with ``If-None-Match`` / ``If-Modified-Since``, split over ``--processes``
interpreters (as a crawl's workers are) of ``--concurrency`` requests each, with aiohttp
(crawlog's own HTTP client) and no queue, log, lease or politeness: what a recrawl of the
same pages cannot go below on the same machine. Timed whole under ``/usr/bin/time`` by
``bench_recrawl.py``, interpreter start and imports included, as crawlog's commands are.
Prints how many pages answered 304 and how many did not.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import sys
from pathlib import Path

import aiohttp

PROCESSES = 2
CONCURRENCY = 32
TIMEOUT_S = 30.0
Pages = list[tuple[str, dict[str, str]]]
"""Each page's URL and the validators its fetch left (header name -> value)."""


async def _prepare(urls: list[str]) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    limit = asyncio.Semaphore(CONCURRENCY)
    timeout = aiohttp.ClientTimeout(total=TIMEOUT_S)
    async with aiohttp.ClientSession(timeout=timeout) as session:

        async def one(url: str) -> None:
            async with limit, session.get(url, allow_redirects=False) as response:
                await response.read()
                headers = {
                    name: response.headers[name]
                    for name in ("ETag", "Last-Modified")
                    if name in response.headers
                }
                if headers:
                    found[url] = headers

        await asyncio.gather(*(one(url) for url in urls))
    return found


async def _revisit(
    validators: list[tuple[str, dict[str, str]]], concurrency: int
) -> tuple[int, int]:
    unchanged = other = 0
    limit = asyncio.Semaphore(concurrency)
    timeout = aiohttp.ClientTimeout(total=TIMEOUT_S)
    conditional = {"ETag": "If-None-Match", "Last-Modified": "If-Modified-Since"}
    async with aiohttp.ClientSession(timeout=timeout) as session:

        async def one(url: str, seen: dict[str, str]) -> None:
            nonlocal unchanged, other
            headers = {conditional[name]: value for name, value in seen.items()}
            async with limit, session.get(url, headers=headers, allow_redirects=False) as response:
                await response.read()
                if response.status == 304:
                    unchanged += 1
                else:
                    other += 1

        await asyncio.gather(*(one(url, seen) for url, seen in validators))
    return unchanged, other


def _revisit_share(
    validators: list[tuple[str, dict[str, str]]], concurrency: int
) -> tuple[int, int]:
    return asyncio.run(_revisit(validators, concurrency))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    prepare = sub.add_parser("prepare")
    prepare.add_argument("urls", type=Path)
    prepare.add_argument("validators", type=Path)
    revisit = sub.add_parser("revisit")
    revisit.add_argument("validators", type=Path)
    revisit.add_argument("--processes", type=int, default=PROCESSES)
    revisit.add_argument("--concurrency", type=int, default=CONCURRENCY)
    args = parser.parse_args()
    if args.command == "prepare":
        urls = args.urls.read_text().split()
        args.validators.write_text(json.dumps(asyncio.run(_prepare(urls))))
        return 0
    pages = list(json.loads(args.validators.read_text()).items())
    shares = [(pages[n :: args.processes], args.concurrency) for n in range(args.processes)]
    with multiprocessing.get_context("fork").Pool(args.processes) as pool:
        counts = pool.starmap(_revisit_share, shares)
    print(f"{sum(c[0] for c in counts)} unchanged, {sum(c[1] for c in counts)} not")
    return 0


if __name__ == "__main__":
    sys.exit(main())
