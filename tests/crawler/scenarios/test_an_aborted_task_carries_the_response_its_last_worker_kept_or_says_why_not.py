"""A task whose workers all died on it (SIGKILL in its spider) is aborted by a worker that
never saw its page. A worker running a task that was recovered before keeps the response in
Redis before its spider sees it, and the abort carries that: ``crawlog history`` shows it and
``crawlog evidence`` exports it. A task aborted before any recovered run of it kept one has
none: ``history`` says so, and ``crawlog evidence`` refuses in one line with the reason."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from crawler.testsite import serve_testsite
from eventlog import EventLog, TaskAborted
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def _abort(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    url: str,
    recovery_limit: int,
) -> None:
    await start_job(
        [url],
        spider="tests.crawler.spiders:DeadlySpider",
        lease_ms=800,
        recovery_limit=recovery_limit,
    )
    for n in range(1, 10):
        code = await (await worker_process(f"w{n}", "--exit-when-done")).wait()
        if code == 0:
            return
        assert code == -signal.SIGKILL


async def test_an_aborted_task_carries_the_page_its_last_worker_died_on(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    async with serve_testsite(pages=10, seed=2) as site:
        url = site.url + "/item/1"
        with anyio.fail_after(90):
            await _abort(start_job, worker_process, url, recovery_limit=1)
            async with httpx.AsyncClient() as client:
                served = (await client.get(url)).content
            history = await crawlog(valkey_url, data_dir, "history", "--job", job, url)
            out = tmp_path / "why"
            exported = await crawlog(
                valkey_url, data_dir, "evidence", "--job", job, url, "--out", str(out)
            )
    [aborted] = [e.event for e in await log.read_range() if isinstance(e.event, TaskAborted)]
    assert aborted.evidence is not None
    assert (aborted.evidence.status, aborted.evidence.body) == (200, served)
    assert history.returncode == 0, history.stderr
    assert "evidence (aborted at " in history.stdout, history.stdout
    assert exported.returncode == 0, exported.stderr
    [body] = out.glob("body.*")
    assert body.read_bytes() == served


async def test_a_task_aborted_before_a_recovered_run_kept_a_page_has_none_and_says_why(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    async with serve_testsite(pages=10, seed=2) as site:
        url = site.url + "/item/1"
        with anyio.fail_after(90):
            # No recovery allowed: the one worker that fetched the page was not running a
            # recovered task, so it kept nothing before it died.
            await _abort(start_job, worker_process, url, recovery_limit=0)
            history = await crawlog(valkey_url, data_dir, "history", "--job", job, url)
            out = str(tmp_path / "why")
            exported = await crawlog(
                valkey_url, data_dir, "evidence", "--job", job, url, "--out", out
            )
    [aborted] = [e.event for e in await log.read_range() if isinstance(e.event, TaskAborted)]
    assert aborted.evidence is None
    assert history.returncode == 0, history.stderr
    assert "evidence: none (aborted at " in history.stdout
    assert exported.returncode == 2
    assert exported.stderr.count("\n") == 1
    assert f"ended with no response to keep ({aborted.reason})" in exported.stderr
