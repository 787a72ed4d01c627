"""A journalled write refused because its task's lease was taken over (`TaskOrphaned`, the
journal's fencing after a store loss or a stall) is refused by design: the crawl's summary
counts it apart ("0 anomalies, 1 journalled write(s) orphaned") and the report says which of
its refused events it is."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from eventlog import JobKeys, TaskOrphaned, encode
from tests.crawler.conftest import ROOT
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_an_orphaned_write_is_not_an_anomaly_of_the_summary_and_is_named_by_the_report(
    redis_client: aioredis.Redis, valkey_url: str, job: str, data_dir: Path
) -> None:
    orphan = TaskOrphaned(actor="w9", task_id="gone", entry_id="1-0", step="finish", events=4)
    await redis_client.xadd(JobKeys(job).events, {"e": encode(orphan)})
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
    summary = crawled.stdout.decode()
    assert crawled.returncode == 0, crawled.stderr.decode()
    assert "0 anomalies, 1 journalled write(s) orphaned" in summary, summary
    assert report.returncode == 0, report.stderr
    assert "Anomalies: 1 refused event (1 of them journalled writes orphaned" in report.stdout
    assert as_json.json()["anomalies"]["orphaned"] == 1
