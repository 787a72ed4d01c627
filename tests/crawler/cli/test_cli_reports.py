"""`crawlog report|sql|export`, run as a user would: a separate process per command."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import redis.asyncio as aioredis

from crawler.cli._argv import crawlog_command
from eventlog import (
    AnyEvent,
    EventLog,
    ItemScraped,
    PageFetched,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
    TaskFailed,
)
from projector._projector import Projector
from tests.server_helpers import clean_env

pytestmark = pytest.mark.anyio
SITE = "http://site.test"
TASKS = 5


def crawl() -> list[AnyEvent]:
    """Five tasks: four done with a page and an item each (one item key twice), one failed."""
    events: list[AnyEvent] = []
    for n in range(TASKS):
        task = f"t{n}"
        events += [
            TaskEnqueued(actor="seed", task_id=task, url=f"{SITE}/{task}", site=SITE),
            TaskClaimed(actor="w1", task_id=task, attempt=1),
            PageFetched(
                actor="w1",
                task_id=task,
                attempt=1,
                url=f"{SITE}/{task}",
                status=200,
                bytes=1000,
                elapsed_ms=10.0 * (n + 1),
                page=1,
            ),
        ]
        if n == TASKS - 1:
            events.append(TaskFailed(actor="w1", task_id=task, attempt=1, reason="http 404"))
            continue
        key = "shared" if n < 2 else f"item-{n}"
        events += [
            ItemScraped(actor="w1", task_id=task, key=key, data={"n": n}),
            TaskDone(actor="w1", task_id=task, attempt=1),
        ]
    return events


@pytest.fixture
async def data_dir(
    tmp_path: Path, redis_client: aioredis.Redis, job: str, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A data directory with the crawl's log projected and committed."""
    clean_env(monkeypatch)
    directory = tmp_path / "data"
    await EventLog(redis_client, job).append_many(crawl())
    async with Projector(redis_client, job, directory) as projector:
        await projector.catch_up()
    return directory


def crawlog(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        crawlog_command(*map(str, args)),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def assert_one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("crawlog: error: ")
    for fragment in fragments:
        assert fragment in lines[0]


async def test_report_as_text_and_json(data_dir: Path, job: str) -> None:
    text = ok(crawlog("report", "--job", job, "--data-dir", data_dir))
    assert f"crawlog report: job {job}" in text
    assert "Tasks: 5" in text and "http 404" in text
    report = json.loads(ok(crawlog("report", "--job", job, "--data-dir", data_dir, "--json")))
    assert report["totals"]["by_status"]["done"] == 4
    assert report["totals"]["items"] == 3
    assert report["response_times"]["avg_ms"] == pytest.approx(30.0)
    assert report["stuck"]["lease_s"] == 30.0


async def test_sql_in_every_format(data_dir: Path, job: str) -> None:
    sql = "SELECT status, count(*) AS tasks FROM tasks GROUP BY status ORDER BY status"
    table = ok(crawlog("sql", "--job", job, "--data-dir", data_dir, sql)).splitlines()
    assert table[0].split() == ["status", "tasks"]
    assert table[2].split() == ["done", "4"]
    assert table[3].split() == ["failed", "1"]
    assert table[-1] == "(2 rows)"
    as_csv = ok(crawlog("sql", "--job", job, "--data-dir", data_dir, "--format", "csv", sql))
    assert as_csv == "status,tasks\ndone,4\nfailed,1\n"
    as_json = ok(crawlog("sql", "--job", job, "--data-dir", data_dir, "--format", "json", sql))
    assert json.loads(as_json) == [{"status": "done", "tasks": 4}, {"status": "failed", "tasks": 1}]


async def test_a_bad_query_is_one_line_naming_the_views(data_dir: Path, job: str) -> None:
    result = crawlog("sql", "--job", job, "--data-dir", data_dir, "SELECT nope FROM pagez")
    assert_one_line_error(result, "pagez", "views: events, pages, items, tasks, sites")


async def test_an_unknown_job_is_one_line(data_dir: Path) -> None:
    result = crawlog("report", "--job", "nobody", "--data-dir", data_dir)
    # Not "is the projector running?": a job with no data here is most often a typo.
    assert_one_line_error(
        result,
        "no job 'nobody' has data under",
        "`crawlog jobs`",
        "`crawlog project --job nobody --once`",
    )


async def test_export_to_files_and_stdout(data_dir: Path, job: str, tmp_path: Path) -> None:
    base = ("export", "--job", job, "--data-dir", data_dir)
    for fmt in ("jsonl", "csv", "parquet"):
        out = tmp_path / f"pages.{fmt}"
        assert ok(crawlog(*base, "--what", "pages", "--format", fmt, out)) == (
            f"exported {TASKS} pages to {out}\n"
        )
    assert pq.read_table(tmp_path / "pages.parquet").column("worker").to_pylist() == ["w1"] * 5
    jsonl = ok(crawlog(*base, "--what", "pages", "--format", "jsonl", "-"))
    assert jsonl == (tmp_path / "pages.jsonl").read_text()
    assert [json.loads(line)["elapsed_ms"] for line in jsonl.splitlines()] == [
        10.0,
        20.0,
        30.0,
        40.0,
        50.0,
    ]
    items = ok(crawlog(*base, "--what", "items", "--format", "csv", "--with-meta", "-"))
    rows = list(csv.DictReader(io.StringIO(items)))
    assert [(r["key"], r["task_id"]) for r in rows] == [
        ("shared", "t0"),
        ("item-2", "t2"),
        ("item-3", "t3"),
    ]
    refused = crawlog(*base, "--what", "items", "--format", "parquet", "-")
    assert_one_line_error(refused, "Parquet is binary")


def test_every_command_has_an_example() -> None:
    for command in ("report", "sql", "export"):
        assert "Example:  crawlog " + command in ok(crawlog(command, "--help"))
