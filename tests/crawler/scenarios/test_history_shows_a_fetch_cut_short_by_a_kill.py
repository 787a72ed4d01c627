"""`crawlog history` shows every fetch attempt the log knows of: a page in flight when its
worker was SIGKILLed left no fetch event, but the site served it; the restart's take-back
shows that delivery, and history says it was interrupted and may have been requested."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import Faults, serve_testsite
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio
LONG_LEASE_MS = 120_000
"""Longer than the test: the restarted worker takes its own entry back, nothing expires."""


async def test_a_page_in_flight_at_a_kill_is_an_interrupted_attempt_in_history(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    # Every page answers late: the kill lands while the seed's request is at the site.
    async with serve_testsite(pages=5, seed=1, faults=Faults(slow_rate=1.0, slow_s=1.0)) as site:
        seed = site.url + "/"
        await start_job([seed], max_depth=0, lease_ms=LONG_LEASE_MS)
        with anyio.fail_after(90):
            first = await worker_process("w1")
            # At the site, not answered: the request log records a request once answered,
            # and by then the worker may have written its page.
            while not site.answering("/"):
                await anyio.sleep(0.01)
            first.send_signal(signal.SIGKILL)
            await first.wait()
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
            shown = await crawlog(valkey_url, data_dir, "history", "--job", job, seed)
            as_json = await crawlog(valkey_url, data_dir, "history", "--job", job, seed, "--json")
        served = site.fetch_counts()["/"]
    assert served == 2
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "2 fetch attempt(s): attempt 1 page 1 by w1: interrupted, no fetch recorded" in text
    assert "attempt 1 page 1 by w1: HTTP 200" in text, text
    assert "the page may have been requested" in text
    attempts = as_json.json()["fetch_attempts"]
    assert [a["outcome"] for a in attempts] == ["interrupted", "fetched"]
