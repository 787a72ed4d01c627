"""``index_archive`` on a job written before segment indexes (each segment one row group,
no index): every segment is written again under its name with its index, its events the
same, and history reads it through the index. An indexing process SIGKILLed midway (a
segment rewritten, its index not yet written) leaves history whole, and a second run
finishes the job."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import redis.asyncio as aioredis

from eventlog import EventLog
from projector._archive import read_entries, read_table
from projector._history import task_history
from projector._projector import Projector
from projector._reindex import index_archive
from projector._segment_index import index_name, matching_row_groups
from projector._store import Store
from tests.projector.history_helpers import crawl, expected_history, url_of

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent.parent
TASKS = 600

# A real indexing process that kills itself when it is about to write its second index:
# that segment is rewritten already, renamed over the old one.
KILLED_INDEXER = """
import os
import signal
import sys
from pathlib import Path

import projector._archive
from projector._reindex import index_archive
from projector._store import Store

data_dir, job = sys.argv[1:]
write_index = projector._archive.write_index
indexes = 0


def write_index_or_die(segment, table):
    global indexes
    indexes += 1
    if indexes == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    write_index(segment, table)


projector._archive.write_index = write_index_or_die
index_archive(Store(Path(data_dir), job))
sys.exit("the indexer was never killed")
"""


def make_old(store: Store) -> None:
    """Lay out the committed segments as before indexes: one row group each, no index."""
    for segment in store.read_manifest().segments:
        path = store.archive / segment.name
        table = read_table(path)
        pq.write_table(table, path, compression="zstd")
        path.with_name(index_name(path.name)).unlink()


async def shows_every_event(redis_client: aioredis.Redis, store: Store, log: EventLog) -> None:
    logged = await log.read_range()
    for n in (0, 6, TASKS // 2, TASKS - 1):
        found = await task_history(redis_client, store, [f"t{n}"], page_url=url_of(n))
        assert [e.stream_id for e in found] == expected_history(logged, f"t{n}", url_of(n))


@pytest.mark.timeout(120)
async def test_indexing_an_old_job_s_archive_keeps_its_events_even_when_killed_midway(
    redis_client: aioredis.Redis,
    log: EventLog,
    make_projector: Callable[..., Projector],
    job: str,
    data_dir: Path,
) -> None:
    events = crawl(TASKS)
    for start in range(0, len(events), 500):
        await log.append_many(events[start : start + 500])
        async with make_projector(commit_events=500) as projector:
            await projector.catch_up()
    store = Store(data_dir, job)
    manifest = store.read_manifest()
    assert len(manifest.segments) >= 3
    archived = [e.stream_id for p in store.segment_paths(manifest) for e in read_entries(p)]
    make_old(store)
    await shows_every_event(redis_client, store, log)

    child = subprocess.run(
        [sys.executable, "-c", KILLED_INDEXER, str(data_dir), job],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert child.returncode == -9, child.stderr[-3000:]
    indexed = [
        matching_row_groups(store.archive / s.name, s.events, (), None) is not None
        for s in manifest.segments
    ]
    assert indexed[:2] == [True, False] and not any(indexed[2:])
    await shows_every_event(redis_client, store, log)

    assert index_archive(store) == [s.name for s in manifest.segments[1:]]
    assert store.read_manifest() == manifest
    for segment in manifest.segments:
        path = store.archive / segment.name
        assert matching_row_groups(path, segment.events, (), None) is not None
    assert [e.stream_id for p in store.segment_paths(manifest) for e in read_entries(p)] == archived
    await shows_every_event(redis_client, store, log)
    assert index_archive(store) == []
