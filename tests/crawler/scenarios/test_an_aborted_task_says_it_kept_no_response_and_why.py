"""A task whose workers all died on it (SIGKILL in its spider) is aborted with no evidence:
its last response died with the worker that had it. ``crawlog history`` says so, and
``crawlog evidence`` refuses in one line, giving the abort's reason."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import serve_testsite
from eventlog import EventLog, TaskAborted
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_an_aborted_task_has_no_evidence_and_says_why(
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
        await start_job(
            [url], spider="tests.crawler.spiders:DeadlySpider", lease_ms=800, recovery_limit=1
        )
        with anyio.fail_after(90):
            for n in range(1, 10):
                code = await (await worker_process(f"w{n}", "--exit-when-done")).wait()
                if code == 0:
                    break
                assert code == -signal.SIGKILL
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
