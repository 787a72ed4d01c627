"""The plug-in runs the job's projector beside Scrapy, as ``crawlog crawl`` runs its own:
after a plain ``scrapy crawl`` (no ``crawlog project``), ``report`` and ``export`` read
the whole job."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import RunningSite
from tests.crawler.scrapy.conftest import ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(180)]


async def crawlog(valkey_url: str, data_dir: Path, *args: str) -> str:
    command = crawlog_command(*args, "--data-dir", str(data_dir))
    env = {**os.environ, "REDIS_URL": valkey_url}
    result = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.decode()


async def test_report_and_export_read_the_job_with_no_projector_run_by_hand(
    scrapy_site: RunningSite,
    scrapy_process: Callable[..., Any],
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    reachable = len(scrapy_site.reachable)
    with anyio.fail_after(150):
        process = await scrapy_process(env={"CRAWLOG_PROJECT": "1"})
        assert await process.wait() == 0
        report = await crawlog(valkey_url, data_dir, "report", "--job", job)
        items = await crawlog(
            valkey_url, data_dir, "export", "--job", job, "--what", "items", "--format", "csv", "-"
        )

    assert str(reachable) in report
    assert len(items.strip().splitlines()) == reachable + 1  # the header
