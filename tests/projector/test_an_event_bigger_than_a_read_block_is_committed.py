"""An event bigger than Arrow's JSON read block (a spider's big item) is archived and
committed like any other; and a commit that fails stops the projector with its error
instead of leaving it waiting forever."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from eventlog import EventLog, ItemScraped, TaskClaimed, TaskDone, TaskEnqueued
from projector._archive import read_entries, segment_name
from projector._projector import Projector
from projector._store import Store

pytestmark = pytest.mark.anyio

BIG = 3 * 2**20
"""Three times the JSON reader's block: the size that stalled the projector."""


def big_item_task() -> list[TaskEnqueued | TaskClaimed | ItemScraped | TaskDone]:
    return [
        TaskEnqueued(actor="seed", task_id="t", url="http://site.test/", site="site.test"),
        TaskClaimed(actor="w1", task_id="t", attempt=1),
        ItemScraped(actor="w1", task_id="t", key="big", data={"blob": "x" * BIG}),
        TaskDone(actor="w1", task_id="t", attempt=1),
    ]


async def test_an_item_bigger_than_a_read_block_is_archived_whole(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> None:
    events = big_item_task()
    await log.append_many(events)
    with anyio.fail_after(60):
        async with make_projector() as projector:
            await projector.catch_up()
    assert projector.state.job.tasks["done"] == 1
    manifest = Store(data_dir, job).read_manifest()
    assert manifest.position == await log.last_id()
    archived = [e for p in Store(data_dir, job).segment_paths(manifest) for e in read_entries(p)]
    assert [e.event for e in archived] == events


async def test_a_commit_that_fails_stops_the_projector_with_its_error(
    log: EventLog, valkey_url: str, job: str, tmp_path: Path
) -> None:
    events = big_item_task()[:1]
    await log.append_many(events)
    (entry,) = await log.read_after()
    # A directory where the segment file goes: the commit's rename onto it fails.
    archive = Store(tmp_path, job).archive
    archive.mkdir(parents=True)
    (archive / segment_name(entry.stream_id, entry.stream_id)).mkdir()
    command = [
        sys.executable,
        "-m",
        "crawler.cli",
        "project",
        "--job",
        job,
        "--once",
        "--data-dir",
        str(tmp_path),
    ]
    with anyio.fail_after(60):
        ran = await anyio.run_process(
            command, env={**os.environ, "REDIS_URL": valkey_url}, check=False
        )
    assert ran.returncode == 2
    (line,) = ran.stderr.decode().splitlines()
    assert "Directory" in line or "directory" in line
