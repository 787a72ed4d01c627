"""`crawlog status` of a crawl SIGKILLed with pages in flight: its workers are gone, their
politeness slots still held. Nobody is waiting for a slot: status says no worker is alive
and how to resume, not "waiting for a host slot"."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import Faults, serve_testsite
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio
EVERY_PAGE_SLOW = Faults(slow_rate=1.0, slow_s=2.0)
"""Requests stay in flight long enough to be killed in, each holding its host's slot."""


async def test_status_after_the_kill_says_no_worker_is_alive_and_to_run_the_crawl_again(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    env = {**os.environ, "REDIS_URL": valkey_url}
    where = ("--job", job, "--data-dir", str(data_dir))
    async with serve_testsite(pages=40, faults=EVERY_PAGE_SLOW) as site:
        crawl = crawlog_command("crawl", site.url + "/", *where, "--workers", "1", "--lease", "60")
        with anyio.fail_after(60):
            killed = await anyio.open_process(crawl, env=env, cwd=ROOT, start_new_session=True)
            while not any(r.path.startswith("/list") for r in site.requests):
                await anyio.sleep(0.01)
            os.killpg(killed.pid, signal.SIGKILL)  # the crawl, its worker, its projector
            await killed.wait()
            await killed.aclose()
            status = await anyio.run_process(
                crawlog_command("status", *where), env=env, cwd=ROOT, check=False
            )
    out = status.stdout.decode()
    assert status.returncode == 0, status.stderr.decode()
    assert "waiting for a host slot" not in out, out
    assert "no worker alive" in out, out
    assert f"crawlog crawl ... --job {job}" in out, out
