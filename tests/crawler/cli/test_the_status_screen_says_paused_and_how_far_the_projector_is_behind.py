"""The status screen: a job-level pause is shown (as a site pause is), a paused row's ETA
reads "paused" rather than a figure that climbs while nothing may move, and the projector's
lag is said as what it is: events and seconds behind the log."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from rich.console import Console

from crawler.cli._progress_view import progress_lines, progress_renderable
from crawler.ops._progress import SiteCounts, Snapshot, progress, sum_counts
from crawler.testsite import RunningSite
from eventlog import EventLog, JobPaused, SitePaused, TaskEnqueued
from tests.crawler.conftest import run_projector
from tests.crawler.operator_cli import crawlog

A, B = "http://a.test", "http://b.test"


def _snapshot(
    at: float, done: int, *, job_paused: bool = False, b_paused: bool = False
) -> Snapshot:
    sites = (
        SiteCounts(site=A, discovered=100, done=done, pending=100 - done),
        SiteCounts(
            site=B, discovered=50, done=done // 2, pending=50 - done // 2, site_paused=b_paused
        ),
    )
    return Snapshot(
        at=at,
        position="1-0",
        sites=sites,
        total=sum_counts(sites),
        job_paused=job_paused,
        job_paused_reason="night shift" if job_paused else "",
    )


def _screen(report: Any) -> str:
    console = Console(width=160, record=True, force_terminal=False)
    console.print(progress_renderable(report))
    return console.export_text()


def test_a_paused_job_says_so_and_its_eta_is_paused_not_a_growing_figure() -> None:
    older, newer = _snapshot(0.0, 10), _snapshot(10.0, 20, job_paused=True)
    report = progress("j", older, newer, tail_events=0)
    assert report.total.paused and report.total.eta_s is None
    screen = _screen(report)
    assert "job paused (night shift)" in screen
    assert "paused" in screen.split("ETA")[1]
    rows = [line for line in screen.splitlines() if line.lstrip().startswith(("http", "total"))]
    assert all("paused" in line for line in rows), rows
    assert "ETA paused" in progress_lines(report)[0]
    assert "job paused (night shift)" in progress_lines(report)[0]


def test_a_paused_site_s_row_has_no_eta_while_the_others_keep_theirs() -> None:
    report = progress("j", _snapshot(0.0, 10), _snapshot(10.0, 20, b_paused=True))
    a, b = report.sites
    assert (a.paused, b.paused) == (False, True)
    assert a.eta_s is not None and b.eta_s is None
    assert not report.total.paused  # site a still moves
    line = next(line for line in progress_lines(report) if line.strip().startswith(B))
    assert "ETA paused" in line and "[paused]" in line


def test_the_projector_s_lag_is_said_in_events_and_seconds() -> None:
    report = progress("j", None, _snapshot(0.0, 10), tail_events=1234, behind_s=2.5)
    screen = _screen(report)
    assert "projector behind by 1234 events / 2.5 s" in screen
    assert "past the last commit" not in screen
    assert "projector up to date" in _screen(progress("j", None, _snapshot(0.0, 10)))


@pytest.mark.anyio
async def test_status_of_a_job_paused_by_an_operator_shows_the_pause_and_the_projector_lag(
    valkey_url: str,
    job: str,
    data_dir: Path,
    site: RunningSite,
    start_job: Callable[..., Any],
    log: EventLog,
) -> None:
    await start_job([site.url + "/"])
    with anyio.fail_after(60):
        await run_projector(valkey_url, job, data_dir)
        paused = await crawlog(
            valkey_url, data_dir, "pause", "--job", job, "--reason", "night shift", "--by", "ops"
        )
        assert paused.returncode == 0, paused.stderr
        # Events the projector has not committed: the pause, and two more tasks.
        more = [
            TaskEnqueued(actor="seed", task_id=f"t{n}", url=f"{site.url}/t{n}", site=site.url)
            for n in range(2)
        ]
        await log.append_many(more)
        status = await crawlog(valkey_url, data_dir, "status", "--job", job)
        as_json = await crawlog(valkey_url, data_dir, "status", "--job", job, "--json")
    assert status.returncode == 0, status.stderr
    assert "job paused (night shift)" in status.stdout, status.stdout
    assert "ETA paused" in status.stdout
    assert "projector behind by 3 events / " in status.stdout, status.stdout
    data = json.loads(as_json.stdout)
    assert (data["job_paused"], data["total"]["paused"], data["tail_events"]) == (True, True, 3)
    assert data["behind_s"] is not None and data["behind_s"] >= 0


def test_job_and_site_pause_events_reach_the_snapshot() -> None:
    from crawler.ops._progress import Tracker
    from tests.projector.strategies import as_entries

    tracker = Tracker()
    tracker.fold(
        as_entries(
            [
                TaskEnqueued(actor="seed", task_id="t1", url=f"{A}/1", site=A),
                SitePaused(actor="ops", site=A, reason="asked"),
                JobPaused(actor="ops", reason="night shift"),
            ]
        )
    )
    snapshot = tracker.snapshot(at=0.0)
    assert (snapshot.job_paused, snapshot.job_paused_reason) == (True, "night shift")
    assert snapshot.sites[0].site_paused
