"""A spider written with Scrapy's hands yields a ``scrapy.Request``: its task fails with one
clear reason, to yield ``response.follow(...)`` (a ``Follow``) instead; the worker tells
the request by its class, without importing Scrapy itself."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from eventlog import EventLog, TaskFailed
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio


async def test_a_yielded_scrapy_request_fails_its_task_saying_use_response_follow(
    valkey_url: str, data_dir: Path, job: str, log: EventLog
) -> None:
    env = {**os.environ, "REDIS_URL": valkey_url}
    async with serve_testsite(pages=20, seed=3) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--job", job, "--fail-on", "never",
            "--spider", "tests.crawler.spider_api_spiders:ScrapyRequestSpider",
            "--workers", "1", "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(90):
            await anyio.run_process(command, env=env, cwd=ROOT, check=False)
    failed = [
        e for e in (entry.event for entry in await log.read_range()) if isinstance(e, TaskFailed)
    ]
    assert len(failed) == 1
    reason = failed[0].reason
    assert "is a Scrapy Request" in reason and "response.follow(url" in reason, reason
