"""`crawlog status --job J --json`: a worker crawls in its own process, status reads it."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import Faults, RunningSite, serve_testsite
from eventlog import EventLog
from projector._fold import fold
from tests.crawler.conftest import ROOT, run_projector

pytestmark = pytest.mark.anyio

# Every page answered a second late: the crawl outlasts a `status` process's start even on a
# loaded machine, where a fast site was crawled to the end before status first looked.
SLOW_PAGES = Faults(slow_rate=1.0, slow_s=1.0)


@pytest.fixture
async def site() -> AsyncIterator[RunningSite]:
    async with serve_testsite(pages=12, seed=1, faults=SLOW_PAGES) as running:
        yield running


async def crawlog_status(valkey_url: str, job: str, data_dir: Path, *extra: str) -> Any:
    """Run ``crawlog status --json`` once; its JSON (the test fails unless it exits 0)."""
    command = crawlog_command(
        "status", "--job", job, "--json",
        "--data-dir", str(data_dir), *extra,
    )  # fmt: skip
    env = {**os.environ, "REDIS_URL": valkey_url}
    result = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stderr.decode()
    return json.loads(result.stdout)


async def test_status_shows_the_workers_while_they_run_and_the_log_s_numbers_after(
    valkey_url: str,
    job: str,
    data_dir: Path,
    site: RunningSite,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
) -> None:
    await start_job([site.url + "/"])
    with anyio.fail_after(60):
        worker = await worker_process("w1", "--exit-when-done")
        seen_alive = None
        while worker.returncode is None and seen_alive is None:
            running = await crawlog_status(valkey_url, job, data_dir)
            seen_alive = next((w for w in running["workers"] if w["alive"]), None)
        await worker.wait()
    assert worker.returncode == 0
    assert seen_alive is not None, "status never saw the worker alive while it crawled"
    assert seen_alive["name"] == "w1"
    assert running["lease_ms"] == 30_000

    # Nothing projected yet: every number comes from folding the stream here.
    after = await crawlog_status(valkey_url, job, data_dir)
    entries = await log.read_range()
    state = fold(entries)
    assert after["position"] == entries[-1].stream_id
    assert after["tail_events"] == len(entries)
    total = after["total"]
    assert total["discovered"] == len(state.tasks) == len(site.reachable)
    assert total["done"] == state.job.tasks.get("done", 0)
    assert total["failed"] == state.job.tasks.get("failed", 0) + state.job.tasks.get("aborted", 0)
    assert total["pages"] == state.job.pages
    assert total["remaining"] == 0 and after["complete"] is True
    assert total["eta_s"] == 0
    assert [s["site"] for s in after["sites"]] == [site.url]
    assert after["workers"] == [], "a worker that exited holds no name and no lease"

    # Projected: the same numbers from the committed state, nothing left in the tail.
    await run_projector(valkey_url, job, data_dir)
    committed = await crawlog_status(valkey_url, job, data_dir)
    assert committed["tail_events"] == 0
    assert committed["total"] == total
    assert committed["position"] == after["position"]


async def test_status_of_an_unknown_job_is_one_line_and_exit_2(
    valkey_url: str, job: str, data_dir: Path
) -> None:
    command = crawlog_command("status", "--job", job)
    env = {**os.environ, "REDIS_URL": valkey_url}
    result = await anyio.run_process(
        [*command, "--data-dir", str(data_dir)], env=env, cwd=ROOT, check=False
    )
    assert result.returncode == 2
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    # Other tests' jobs on the same server may be near enough for a "did you mean".
    assert lines[0].startswith(f"crawlog: error: no job {job!r} here")
    assert lines[0].endswith(
        f"start it with `crawlog crawl SEED --job {job}`; `crawlog jobs` lists the jobs"
    )
