"""A crawl stopped with Ctrl-C or SIGTERM: the workers stop first (their last events in the
log), then the projector reads to the log's end and commits, then the summary is printed
from that commit, so the summary, `report` and `export` agree with the log."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import Faults, serve_testsite
from eventlog import EventLog, ItemScraped, TaskDone, connect
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("how", ["sigterm", "ctrl-c"])
async def test_a_stopped_crawl_reports_every_event_its_workers_wrote(
    valkey_url: str, data_dir: Path, job: str, tmp_path: Path, how: str
) -> None:
    env = {**os.environ, "REDIS_URL": valkey_url}
    # Slow pages: when the stop comes, every worker has pages in flight that end with events
    # written after it.
    faults = Faults(slow_rate=0.5, slow_s=0.4)
    async with serve_testsite(pages=400, seed=4, faults=faults) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--job", job,
            "--workers", "2", "--concurrency", "8", "--per-host", "16",
            "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(90), (tmp_path / "out").open("wb") as sink:
            # Its own process group, as a shell gives a command: Ctrl-C is a SIGINT to all
            # of the group (the crawl, and whichever of its children share the group).
            crawl = await anyio.open_process(
                command, env=env, cwd=ROOT, start_new_session=True, stdout=sink, stderr=None
            )
            async with crawl:
                while site.request_count < len(site.reachable) // 3:
                    await anyio.sleep(0.01)
                if how == "sigterm":
                    crawl.send_signal(signal.SIGTERM)
                else:
                    os.killpg(crawl.pid, signal.SIGINT)
                code = await crawl.wait()
        assert site.request_count < len(site.reachable), "stopped mid-crawl"
    out = (tmp_path / "out").read_text()
    assert code == 1, out  # stopped, not finished
    async with connect(valkey_url) as client:
        events = [e.event for e in await EventLog(client, job).read_range()]
    done = {e.task_id for e in events if isinstance(e, TaskDone)}
    items = {e.key for e in events if isinstance(e, ItemScraped)}
    summary = re.search(r"stopped \S+ in [\d.]+ s: (.*)", out)
    assert summary is not None, out
    assert f"{len(done)} done" in summary.group(1), out
    assert f"{len(items)} items" in summary.group(1), out

    exported = tmp_path / "items.jsonl"
    export = await anyio.run_process(
        crawlog_command("export", "--job", job, "--data-dir",
         str(data_dir), "--what", "items", "--format", "jsonl", "--with-meta", str(exported)),
        env=env, cwd=ROOT, check=False,
    )  # fmt: skip
    assert export.returncode == 0, export.stderr.decode()
    keys = {json.loads(line)["key"] for line in exported.read_text().splitlines()}
    assert keys == items
