"""A worker whose clock is an hour behind (run under libfaketime) crawls beside one whose
clock is right: ``report`` times the crawl by the server's clock (its stream IDs), not by
the events' own times an hour apart, and ``report`` and ``status`` name the worker whose
clock is off."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import Faults, serve_testsite
from projector import CLOCK_SKEW_WARNING_S
from tests.crawler.conftest import run_projector
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio

LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
"""Debian's ``faketime`` package (``apt-get install faketime``)."""
HOUR_BEHIND = {
    "LD_PRELOAD": str(LIBFAKETIME),
    "FAKETIME": "-3600",
    # Only the wall clock is an hour off; the monotonic clock the worker waits by is not.
    "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    "FAKETIME_NO_CACHE": "1",
}
PAGES_BEHIND_ALONE = 10
AN_HOUR = r"3,(59[5-9]|60[0-5])"
"""An hour as the warnings print it: an offset is measured as an event's time minus the
time the server wrote it, so the time it took to be written (up to a second or more on a
loaded machine, for a task whose events were all written in one batch) is in it."""


@pytest.mark.skipif(not LIBFAKETIME.exists(), reason="needs Debian's faketime package")
async def test_a_worker_an_hour_behind_is_named_and_the_crawl_is_timed_by_the_server(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    async with serve_testsite(pages=60, seed=2, faults=Faults(slow_rate=1.0, slow_s=0.02)) as site:
        await start_job([site.url + "/"])
        with anyio.fail_after(120):
            behind = await worker_process("behind", "--exit-when-done", env=HOUR_BEHIND)
            while len(site.requests) < PAGES_BEHIND_ALONE:  # its pages in the log for sure
                await anyio.sleep(0.01)
            right = await worker_process("right", "--exit-when-done")
            assert await behind.wait() == 0
            assert await right.wait() == 0
            await run_projector(valkey_url, job, data_dir)
            as_json = await crawlog(valkey_url, data_dir, "report", "--job", job, "--json")
            text = await crawlog(valkey_url, data_dir, "report", "--job", job)
            status = await crawlog(valkey_url, data_dir, "status", "--job", job)
            status_json = await crawlog(valkey_url, data_dir, "status", "--job", job, "--json")
            one = await crawlog(
                valkey_url, data_dir, "sql", "--job", job, "--format", "csv",
                "SELECT url FROM pages WHERE worker = 'behind' ORDER BY stream_ms LIMIT 1",
            )  # fmt: skip
            url = one.stdout.splitlines()[1]
            history = await crawlog(valkey_url, data_dir, "history", "--job", job, url)
    assert as_json.returncode == 0, as_json.stderr
    report = as_json.json()
    workers = {r["worker"] for r in report["clock_skew"]}
    assert workers == {"behind"}, report["clock_skew"]
    (skew,) = report["clock_skew"]
    assert skew["offset_s"] == pytest.approx(-3600, abs=CLOCK_SKEW_WARNING_S)
    # Both workers' pages in the same minute or two of the server's clock, not 61 minutes.
    assert report["throughput"]["minutes"] <= 2, report["throughput"]
    assert re.search(
        rf"Warning: worker behind's clock is {AN_HOUR} s behind the server's", text.stdout
    )
    assert "right's clock" not in text.stdout
    assert status.returncode == 0, status.stderr
    assert re.search(rf"behind {AN_HOUR} s behind", status.stdout), status.stdout
    assert [s["worker"] for s in status_json.json()["clock_skew"]] == ["behind"]
    # A task the worker an hour behind fetched: its events at the server's times, and why.
    assert history.returncode == 0, history.stderr
    assert re.search(
        rf"warning: behind's clock is {AN_HOUR} s behind the server's", history.stdout
    ), history.stdout
    moments = [
        dt.datetime.fromisoformat(" ".join(line.split()[:2]))
        for line in history.stdout.splitlines()
        if " task." in line
    ]
    # Enqueued by the test, fetched by the worker an hour behind: a minute apart at most.
    assert len(moments) >= 3 and max(moments) - min(moments) < dt.timedelta(minutes=1)
