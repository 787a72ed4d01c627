"""A page is counted when it was requested, and a fetch again is a recovery's refetch only
if the page had been got: a seed on a closed port (robots.txt unreachable, so the page is
never asked for) reports no pages, and a page retried after an HTTP 500 is a retry in the
report, not a recovery."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import Faults, serve_testsite
from tests.crawler.cli_run import free_port
from tests.crawler.conftest import run_projector
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_a_seed_on_a_closed_port_reports_no_page_fetched(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    seed = f"http://127.0.0.1:{free_port()}/"
    await start_job([seed], max_attempts=2)
    with anyio.fail_after(90):
        assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
        await run_projector(valkey_url, job, data_dir)
        report = await crawlog(valkey_url, data_dir, "report", "--job", job, "--json")
        history = await crawlog(valkey_url, data_dir, "history", "--job", job, seed)
    data = report.json()
    assert (data["totals"]["pages"], data["totals"]["refetches"]) == (0, 0), data["totals"]
    assert data["totals"]["by_status"]["failed"] == 1
    [reason] = data["failures"]["task_reasons"]
    assert reason["reason"].startswith("robots.txt unreachable: "), reason
    assert data["response_times"]["pages"] == 0
    assert "task.page" not in history.stdout, history.stdout
    assert "task.retry_scheduled" in history.stdout and "robots.txt unreachable" in history.stdout


async def test_a_page_retried_after_an_http_500_is_a_retry_not_a_recovery(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    faults = Faults(error_500_rate=1.0, error_500_times=1)
    async with serve_testsite(pages=10, seed=1, faults=faults) as site:
        await start_job([site.url + "/"], max_depth=0)
        with anyio.fail_after(90):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
            await run_projector(valkey_url, job, data_dir)
            report = await crawlog(valkey_url, data_dir, "report", "--job", job, "--json")
            text = await crawlog(valkey_url, data_dir, "report", "--job", job)
        assert site.fetch_counts()["/"] == 2
    data = report.json()
    assert (data["totals"]["pages"], data["totals"]["refetches"]) == (2, 0), data["totals"]
    recoveries = data["recoveries"]
    assert (recoveries["pages_refetched"], recoveries["refetched"]) == (0, []), recoveries
    assert (data["retries"]["pages_retried"], data["retries"]["retry_fetches"]) == (1, 1)
    assert "1 page fetched again after a failed fetch (1 fetch)" in text.stdout, text.stdout
    assert "0 pages fetched again after a good fetch" in text.stdout
