"""A spider's ``middlewares``: a request hook's header reaches the site, a response hook
runs before the callback, and what a hook drops (a request not sent, a response not parsed)
fails its task with the hook's reason, counted by reason in ``report``."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from eventlog import EventLog, ItemScraped, TaskDone, TaskFailed
from tests.crawler.conftest import ROOT
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


@pytest.mark.timeout(120)
async def test_hooks_sign_requests_see_responses_and_drop_with_a_reason(
    valkey_url: str, data_dir: Path, job: str, log: EventLog
) -> None:
    env = {**os.environ, "REDIS_URL": valkey_url}
    async with serve_testsite(pages=10, seed=2) as site:
        seeds = [site.url + path for path in ("/echo/a", "/echo/b", "/echo/skip", "/echo/never")]
        command = crawlog_command(
            "crawl", *seeds, "--spider", "tests.crawler.middleware_spiders:Hooked",
            "--depth", "0", "--workers", "1", "--delay", "0", "--job", job,
            "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(90):
            result = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
            report = await crawlog(valkey_url, data_dir, "report", "--job", job)
        fetched = site.fetch_counts()
    assert result.returncode == 0, result.stderr.decode()
    events = [entry.event for entry in await log.read_range()]
    items = {e.key: e.data for e in events if isinstance(e, ItemScraped)}
    assert items == {
        "/echo/a": {"hook": "signed", "seen_by": "SkipMarked"},
        "/echo/b": {"hook": "signed", "seen_by": "SkipMarked"},
    }
    failed = sorted(e.reason for e in events if isinstance(e, TaskFailed))
    assert failed == ["dropped: marked skip", "dropped: never asked for"]
    assert sum(isinstance(e, TaskDone) for e in events) == 2
    assert "/echo/never" not in fetched  # dropped before it was sent
    assert fetched["/echo/skip"] == 1  # fetched, not parsed
    assert report.returncode == 0, report.stderr
    assert "dropped: never asked for" in report.stdout
