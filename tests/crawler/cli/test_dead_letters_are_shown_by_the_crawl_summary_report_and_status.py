"""An entry the projector cannot decode is dead-lettered: the crawl's summary, `report` and
`status` say so, instead of "0 anomalies" (the fold never saw it, so no anomaly counts it)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from eventlog import JobKeys
from tests.crawler.conftest import ROOT
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_a_dead_lettered_event_is_counted_by_the_summary_the_report_and_status(
    redis_client: aioredis.Redis, valkey_url: str, job: str, data_dir: Path
) -> None:
    # What a spider's undecodable item (or any foreign writer) leaves in the log.
    await redis_client.xadd(JobKeys(job).events, {"e": b"\x80\x04 neither msgpack nor an event"})
    env = {**os.environ, "REDIS_URL": valkey_url}
    async with serve_testsite(pages=5, seed=1) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--job", job,
            "--workers", "1", "--concurrency", "2", "--depth", "0",
            "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(90):
            crawled = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
            report = await crawlog(valkey_url, data_dir, "report", "--job", job)
            as_json = await crawlog(valkey_url, data_dir, "report", "--job", job, "--json")
            status = await crawlog(valkey_url, data_dir, "status", "--job", job)
            status_json = await crawlog(valkey_url, data_dir, "status", "--job", job, "--json")
    summary = crawled.stdout.decode()
    assert crawled.returncode == 0, crawled.stderr.decode()
    assert "1 dead letter(s)" in summary and f"crawlog dead list --job {job}" in summary, summary
    assert report.returncode == 0, report.stderr
    assert "Anomalies: 0 refused events; 1 dead letter" in report.stdout, report.stdout
    assert as_json.json()["anomalies"]["dead_letters"] == 1
    assert status.returncode == 0, status.stderr
    assert "1 dead letter(s)" in status.stdout, status.stdout
    assert json.loads(status_json.stdout)["dead_letters"] == 1
