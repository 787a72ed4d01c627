"""``crawlog export --follow`` writes only a file it can resume: not stdout, not a file
that exists without its position or is another feed's; each refusal one line, exit 2."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from crawler.cli._argv import crawlog_command
from eventlog import EventLog, ItemScraped, TaskClaimed, TaskEnqueued
from projector._projector import Projector
from tests.server_helpers import clean_env

pytestmark = pytest.mark.anyio
SITE = "http://site.test"


@pytest.fixture
async def data_dir(
    tmp_path: Path, redis_client: aioredis.Redis, job: str, monkeypatch: pytest.MonkeyPatch
) -> Path:
    clean_env(monkeypatch)
    directory = tmp_path / "data"
    await EventLog(redis_client, job).append_many(
        [
            TaskEnqueued(actor="seed", task_id="t1", url=f"{SITE}/", site=SITE),
            TaskClaimed(actor="w1", task_id="t1", attempt=1),
            ItemScraped(actor="w1", task_id="t1", key="a", data={"n": 1}),
        ]
    )
    async with Projector(redis_client, job, directory) as projector:
        await projector.catch_up()
    return directory


def refused(*args: str | Path) -> str:
    result = subprocess.run(
        crawlog_command(*map(str, args)), capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2, result
    [line] = result.stderr.splitlines()
    return line


@pytest.mark.timeout(150)  # several crawlog processes, on a loaded machine
async def test_a_feed_refuses_stdout_a_stranger_s_file_and_another_feed_s(
    data_dir: Path, job: str, tmp_path: Path
) -> None:
    base = ("export", "--job", job, "--data-dir", data_dir, "--what", "items")
    assert "give OUT, not -" in refused(*base, "--format", "jsonl", "--follow", "-")
    assert "--until-done goes with --follow" in refused(
        *base, "--format", "jsonl", "--until-done", tmp_path / "x.jsonl"
    )
    stranger = tmp_path / "mine.jsonl"
    stranger.write_text('{"not": "a feed"}\n')
    assert "has no mine.jsonl.position" in refused(*base, "--format", "jsonl", "--follow", stranger)
    assert stranger.read_text() == '{"not": "a feed"}\n'  # left as it was

    fed = tmp_path / "items.out"
    (tmp_path / "items.out.position").write_text(
        f'{{"job": "{job}", "what": "items", "format": "csv"}}'
    )
    line = refused(*base, "--format", "jsonl", "--follow", fed)
    assert f"is the feed of items of job {job} as csv, not items of {job} as jsonl" in line


@pytest.mark.timeout(150)
async def test_a_feed_of_items_goes_on_only_in_the_form_it_started_in(
    data_dir: Path, job: str, tmp_path: Path
) -> None:
    base = ("export", "--job", job, "--data-dir", data_dir, "--what", "items", "--format")
    plain = tmp_path / "plain.jsonl"
    (tmp_path / "plain.jsonl.position").write_text(
        f'{{"job": "{job}", "what": "items", "format": "jsonl", "meta": false}}'
    )
    line = refused(*base, "jsonl", "--with-meta", "--follow", plain)
    assert f"{plain} is a feed of items without meta: leave out --with-meta" in line
    # A feed started before --with-meta existed wrote envelopes: it goes on with them.
    older = tmp_path / "older.jsonl"
    (tmp_path / "older.jsonl.position").write_text(
        f'{{"job": "{job}", "what": "items", "format": "jsonl"}}'
    )
    line = refused(*base, "jsonl", "--follow", older)
    assert f"{older} is a feed of items with their meta: add --with-meta" in line
