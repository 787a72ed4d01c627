"""A ``Follow``'s ``meta`` and ``cb_kwargs`` travel with its task, and a ``NextPage``'s in
the checkpoint it leaves: the callback is called with the keywords and sees
``response.meta``, ``response.request`` (the request its page answers) and
``response.urljoin``, also on the page a SIGKILLed worker left unfinished, which the same
``crawlog crawl`` run again parses with what the checkpoint kept."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from eventlog import EventLog, ItemScraped, TaskEnqueued
from tests.crawler.conftest import ROOT
from tests.crawler.spider_api_spiders import KILL_AT_PAGE_ENV

pytestmark = pytest.mark.anyio


async def test_meta_and_cb_kwargs_reach_each_callback_before_and_after_a_kill(
    valkey_url: str, data_dir: Path, job: str, log: EventLog, tmp_path: Path
) -> None:
    marker = tmp_path / "killed"
    env = {**os.environ, "REDIS_URL": valkey_url, KILL_AT_PAGE_ENV: f"2:{marker}"}
    async with serve_testsite(pages=400, seed=3) as site:
        sitemap = site.sitemap
        assert sitemap.listing_pages(0) >= 4
        listing = [site.url + sitemap.listing_path(0, p) for p in range(1, 5)]
        command = crawlog_command(
            "crawl", listing[0], "--job", job, "--scope", "host", "--depth", "1",
            "--spider", "tests.crawler.spider_api_spiders:MetaSpider",
            "--workers", "1", "--concurrency", "1", "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(120):
            first = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
            assert marker.exists(), "the worker killed itself on the listing's third page"
            assert first.returncode != 0
            again = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
        assert again.returncode == 0, again.stderr.decode()
        counts = Counter(site.url + r.path for r in site.requests)
        item = next(site.url + r.path for r in site.requests if "/item/" in r.path)
        history = await anyio.run_process(
            crawlog_command("history", "--job", job, "--data-dir", str(data_dir), item),
            env=env, cwd=ROOT, check=False,
        )  # fmt: skip

    assert counts[listing[2]] == 2, "the page the kill interrupted, fetched again"
    events = [entry.event for entry in await log.read_range()]
    items = {e.key: e.data for e in events if isinstance(e, ItemScraped)}
    pages = {url: items[url] for url in listing[1:]}
    assert pages == {
        listing[1]: {
            "url": listing[1], "seen": 1, "meta": {"pages": "listing"},
            "request_url": listing[1],
        },
        listing[2]: {
            "url": listing[2], "seen": 2, "meta": {"pages": "next 2"},
            "request_url": listing[2],
        },
        listing[3]: {
            "url": listing[3], "seen": 3, "meta": {"pages": "next 3"},
            "request_url": listing[3],
        },
    }  # fmt: skip
    products = [data for key, data in items.items() if "/item/" in key]
    assert len(products) == 2
    meta = {"from": listing[0], "depth_seen": 0}
    for product in products:
        url = product["url"]
        assert product == {
            "url": url,
            "listing": listing[0],
            "meta": meta,
            "request": [url, "parse_item", meta],
            "repr": f"<200 {url}>",
        }
    # Carried by the task: its TaskEnqueued event has them, as a retry or a resume reads them.
    specs = {e.url: e.spec for e in events if isinstance(e, TaskEnqueued)}
    spec = specs[products[0]["url"]]
    assert spec is not None and spec.meta == meta
    assert spec.cb_kwargs == {"listing": listing[0]}
    # ... and its history says so.
    told = history.stdout.decode()
    assert history.returncode == 0, history.stderr.decode()
    assert f'callback parse_item, meta {{"from":"{listing[0]}","depth_seen":0}}' in told, told
    assert f'cb_kwargs {{"listing":"{listing[0]}"}}' in told, told
