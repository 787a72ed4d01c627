"""``--proxy URL`` (repeatable) sends every request of the crawl through a proxy: with
``--proxy-rotation site`` (the default) each site always through the same one, the one a
stable hash of the site picks; with ``request`` the proxies take turns. A proxy that cannot
be reached is a fetch error that says so, retried like a refused connection.

Witnesses: the proxies' own logs (what passed through them, `tests.crawler.forward_proxy`)
and the test sites' request logs.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from crawler._identity import proxy_for_site
from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from eventlog import EventLog, RetryScheduled, TaskFailed
from tests.crawler.cli_run import clean_env, free_port
from tests.crawler.forward_proxy import serve_forward_proxy

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]
SPIDER = "tests.crawler.identity_spiders:EchoSpider"


async def crawl(seeds: list[str], job: str, tmp_path: Path, valkey_url: str, *options: str) -> None:
    command = crawlog_command(
        "crawl", *seeds, "--job", job, "--workers", "1", "--spider", SPIDER,
        "--fail-on", "never", "--data-dir", str(tmp_path / "data"), *options,
    )  # fmt: skip
    ran = await anyio.run_process(
        command, cwd=tmp_path, env=clean_env(REDIS_URL=valkey_url), check=False
    )
    assert ran.returncode == 0, ran.stderr.decode()


async def test_each_site_always_goes_through_the_proxy_its_hash_picks(
    valkey_url: str, job: str, tmp_path: Path
) -> None:
    async with (
        serve_testsite(pages=5, seed=1) as one,
        serve_testsite(pages=5, seed=2) as two,
        serve_forward_proxy() as first,
        serve_forward_proxy() as second,
    ):
        proxies = {first.url: first, second.url: second}
        with anyio.fail_after(90):
            await crawl(
                [one.url + "/echo/1", two.url + "/echo/1"], job, tmp_path, valkey_url,
                "--proxy", first.url, "--proxy", second.url,
            )  # fmt: skip

        for site in (one, two):
            chosen = proxy_for_site(tuple(proxies), site.url)
            served = sorted(site.url + request.path for request in site.requests)
            assert len(served) > 1, served  # robots.txt and the echo pages
            for url, proxy in proxies.items():
                passed = sorted(u for u in proxy.requests if u.startswith(site.url + "/"))
                assert passed == (served if url == chosen else []), (url, chosen)


async def test_with_request_rotation_the_proxies_take_turns(
    valkey_url: str, job: str, tmp_path: Path
) -> None:
    async with (
        serve_testsite(pages=5, seed=1) as site,
        serve_forward_proxy() as first,
        serve_forward_proxy() as second,
    ):
        with anyio.fail_after(90):
            await crawl(
                [site.url + "/echo/1"], job, tmp_path, valkey_url,
                "--proxy", first.url, "--proxy", second.url, "--proxy-rotation", "request",
            )  # fmt: skip
        served = len(site.requests)

    # One worker, one turn after the other: neither proxy carries more than one extra.
    assert len(first.requests) + len(second.requests) == served
    assert abs(len(first.requests) - len(second.requests)) <= 1, (first.requests, second.requests)


async def test_an_unreachable_proxy_fails_the_fetch_saying_so_and_is_retried(
    valkey_url: str, job: str, log: EventLog, tmp_path: Path
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    async with serve_testsite(pages=5, seed=1) as site:
        with anyio.fail_after(90):
            await crawl(
                [site.url + "/echo/1"], job, tmp_path, valkey_url,
                "--proxy", dead, "--retries", "1", "--ignore-robots",
                "--backoff-base", "0.01", "--backoff-cap", "0.01",
            )  # fmt: skip
        served = len(site.requests)

    events = [entry.event for entry in await log.read_range()]
    retries = [e.reason for e in events if isinstance(e, RetryScheduled)]
    failed = [(e.reason, e.attempt) for e in events if isinstance(e, TaskFailed)]
    assert retries == ["proxy connect refused"]
    assert failed == [("proxy connect refused", 2)]
    assert served == 0
