"""A worker SIGKILLed mid-crawl leaves requests the site answered and the log never heard
of: resumed, its tasks fetch those pages again. ``report`` counts them as requests that
may have reached the site twice: never fewer than the site's own log shows, and more by at
most the requests the worker could have had in flight. ``status`` and the console's panel,
folding the stream's tail past the projector's commit, say the same number."""

from __future__ import annotations

import re
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from crawler.testsite import Faults, serve_testsite
from crawler.testsite._invariants import site_refetches
from tests.crawler.conftest import run_projector
from tests.crawler.console.conftest import RunningConsole
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio

CONCURRENCY = 4
"""The worker's concurrency (``worker_process``'s): the most requests it has in flight."""
REQUESTS_BEFORE_KILL = 25
SLOW = Faults(slow_rate=1.0, slow_s=0.05)
"""Every page answered after a moment: a kill finds requests on their way."""


def figure(page: str, ident: str) -> int:
    """The number the panel shows in the figure ``ident``."""
    found = re.search(rf'id="{ident}">([\d,]+)<', page)
    assert found, ident
    return int(found.group(1).replace(",", ""))


async def test_a_kill_mid_crawl_counts_what_the_site_saw_twice_and_at_most_what_was_in_flight(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    console: Callable[..., Awaitable[RunningConsole]],
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    async with serve_testsite(pages=80, seed=5, faults=SLOW) as site:
        await start_job([site.url + "/"])
        with anyio.fail_after(120):
            first = await worker_process("w1")
            while len(site.requests) < REQUESTS_BEFORE_KILL:
                await anyio.sleep(0.01)
            first.send_signal(signal.SIGKILL)
            assert await first.wait() == -signal.SIGKILL
            await run_projector(valkey_url, job, data_dir)  # what the kill left, committed
            # The same name takes its own leases back at once, as a restarted crawl does.
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
            # The resumed run is in the stream's tail only: status and the panel fold it.
            status = await crawlog(valkey_url, data_dir, "status", "--job", job, "--json")
            running = await console()
            async with httpx.AsyncClient(base_url=running.base, timeout=20) as http:
                await http.get(running.url)
                panel = (await http.get(f"/jobs/{job}")).text
                while 'id="committed-only"' in panel:  # drawn from the commit while it loads
                    await anyio.sleep(0.05)
                    panel = (await http.get(f"/jobs/{job}")).text
            await run_projector(valkey_url, job, data_dir)
            as_json = await crawlog(valkey_url, data_dir, "report", "--job", job, "--json")
            text = await crawlog(valkey_url, data_dir, "report", "--job", job)
        seen_twice = sum(site_refetches(site).values())
    assert as_json.returncode == 0, as_json.stderr
    report = as_json.json()
    twice = report["totals"]["requests_maybe_twice"]
    # Before: "0 refetches" whatever the site saw. The page each lost lease was on is fetched
    # again after the restart: one at least, unless the kill found the worker between pages
    # (once, on a loaded machine: the site saw none twice either).
    assert seen_twice <= twice <= seen_twice + CONCURRENCY, (seen_twice, twice)
    assert (report["recoveries"]["unrecorded_refetches"] >= 1) == (twice >= 1), report
    assert status.json()["requests_maybe_twice"] == twice
    assert figure(panel, "f-twice") == twice
    assert re.search(
        rf"Pages: \d+ fetched \({twice} requests? may have reached the site twice\)", text.stdout
    ), text.stdout
