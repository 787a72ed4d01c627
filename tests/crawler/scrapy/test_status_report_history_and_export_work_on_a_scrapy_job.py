"""crawlog's own commands work on a job crawled by Scrapy through crawler.scrapy as on a
native one: ``status`` counts its tasks, ``report`` its pages, ``history`` tells one
request's story (claimed, fetched, its item, done), ``export`` writes its items."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import RunningSite
from projector import Store, read_committed
from tests.crawler.conftest import run_projector
from tests.crawler.scrapy.conftest import ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(180)]


async def crawlog(valkey_url: str, data_dir: Path, *args: str) -> str:
    command = crawlog_command(*args, "--data-dir", str(data_dir))
    env = {**os.environ, "REDIS_URL": valkey_url}
    result = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.decode()


async def test_status_report_history_and_export_read_the_scrapy_job(
    scrapy_site: RunningSite,
    scrapy_process: Callable[..., Any],
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    site = scrapy_site
    reachable = len(site.reachable)
    with anyio.fail_after(150):
        process = await scrapy_process()
        assert await process.wait() == 0
        await run_projector(valkey_url, job, data_dir)
        status = await crawlog(valkey_url, data_dir, "status", "--job", job)
        report = await crawlog(valkey_url, data_dir, "report", "--job", job)
        _, state = read_committed(Store(data_dir, job))
        # A Scrapy job's task ids are Scrapy's request fingerprints (crawlog's own are of
        # the URL): history is asked by task id.
        task_id = next(t.task_id for t in state.tasks.values() if t.url.endswith("/item/3"))
        history = await crawlog(valkey_url, data_dir, "history", "--job", job, task_id)
        items = await crawlog(
            valkey_url, data_dir, "export", "--job", job, "--what", "items", "--format", "csv", "-"
        )

    assert "tasks ended (100.0%)" in status
    assert str(reachable) in report
    for what in ("task.enqueued", "task.claimed", "task.page", "task.item", "task.done"):
        assert what.split(".")[1] in history, (what, history)
    assert len(items.strip().splitlines()) == reachable + 1  # the header
