"""Without --job, the console's home page lists the jobs `crawlog jobs` lists, each with
its status and counts, linked to its panel."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.crawler.console.conftest import RunningConsole
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_the_home_page_lists_the_job_with_the_status_crawlog_jobs_gives(
    start_job: Callable[..., Any],
    console: Callable[..., Awaitable[RunningConsole]],
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    await start_job(["http://127.0.0.1:9/"])
    with anyio.fail_after(60):
        listed = await crawlog(valkey_url, data_dir, "jobs", "--json")
        assert listed.returncode == 0, listed.stderr
        [row] = [r for r in listed.json()["jobs"] if r["job"] == job]
        running = await console(of_job=False)
        async with running.session(timeout=20) as http:
            home = await http.get("/")
    assert home.status_code == 200
    assert f'<a href="/jobs/{job}">{job}</a></td><td>{row["status"]}</td>' in home.text
