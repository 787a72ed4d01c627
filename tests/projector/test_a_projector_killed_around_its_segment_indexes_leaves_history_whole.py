"""A projector SIGKILLed at the worst moments for segment indexes: right after a segment
was renamed into place and before its index was written; after its index and before the
manifest that names both; after a merged segment and its index and before the manifest of
the merge. History, read at once from what the dead projector left and again after a
restart, shows every event of the task, and every committed segment ends with its index."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from eventlog import EventLog
from projector._history import task_history
from projector._projector import Projector
from projector._segment_index import index_name, matching_row_groups
from projector._store import Store
from tests.projector.history_helpers import crawl, expected_history, url_of

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent.parent
TASKS = 600
COMMIT_EVENTS = 60
SHOWN = (0, 6, 7, TASKS // 2, TASKS - 1)

# A real projector process that kills itself: "segment", in its third segment's index
# write, before a byte of it (the segment renamed into place already); "index", when the
# manifest it is about to commit names its third segment (that segment's index written);
# "merged", when the manifest names a merged segment.
KILLED_PROJECTOR = """
import os
import signal
import sys
from pathlib import Path

import anyio

import projector._archive
import projector._projector
from eventlog import connect
from projector._projector import Projector
from projector._store import Store

url, job, data_dir, moment = sys.argv[1:]
commit = Store.commit
write_index = projector._archive.write_index
indexes = 0


def write_index_or_die(segment, table):
    global indexes
    indexes += 1
    if moment == "segment" and indexes == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    write_index(segment, table)


def commit_or_die(self, manifest):
    before = self.read_manifest().segments
    if moment == "index" and len(manifest.segments) == 3 > len(before):
        os.kill(os.getpid(), signal.SIGKILL)
    if moment == "merged" and len(manifest.segments) < len(before):
        os.kill(os.getpid(), signal.SIGKILL)
    commit(self, manifest)


projector._archive.write_index = write_index_or_die
projector._projector.READ_BATCH = @BATCH@  # a segment per read: many, and merges
Store.commit = commit_or_die


async def main():
    async with connect(url) as client:
        projector = Projector(
            client, job, Path(data_dir), commit_events=@BATCH@, writer_min_events=10**9
        )
        async with projector:
            await projector.catch_up()
    sys.exit("the projector was never killed")


anyio.run(main)
""".replace("@BATCH@", str(COMMIT_EVENTS))


async def shows_every_event(redis_client: aioredis.Redis, store: Store, log: EventLog) -> None:
    logged = await log.read_range()
    for n in SHOWN:
        found = await task_history(redis_client, store, [f"t{n}"], page_url=url_of(n))
        assert [e.stream_id for e in found] == expected_history(logged, f"t{n}", url_of(n))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("moment", ["segment", "index", "merged"])
async def test_a_projector_killed_around_its_segment_indexes_leaves_history_whole(
    moment: str,
    redis_client: aioredis.Redis,
    log: EventLog,
    make_projector: Callable[..., Projector],
    valkey_url: str,
    job: str,
    data_dir: Path,
) -> None:
    events = crawl(TASKS)
    for start in range(0, len(events), COMMIT_EVENTS):
        await log.append_many(events[start : start + COMMIT_EVENTS])
    child = subprocess.run(
        [sys.executable, "-c", KILLED_PROJECTOR, valkey_url, job, str(data_dir), moment],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert child.returncode == -9, child.stderr[-3000:]
    store = Store(data_dir, job)
    committed = store.read_manifest().segments
    left = set(os.listdir(store.archive)) - {
        name for s in committed for name in (s.name, index_name(s.name))
    }
    assert any(n.endswith(".parquet") for n in left), "killed after the manifest, not before"
    assert any(n.endswith(".idx") for n in left) == (moment != "segment"), left
    await shows_every_event(redis_client, store, log)  # the dead projector's files as they are

    async with make_projector(commit_events=COMMIT_EVENTS) as projector:
        await projector.catch_up()
    manifest = store.read_manifest()
    assert manifest.events == len(events)
    assert sorted(os.listdir(store.archive)) == sorted(
        name for s in manifest.segments for name in (s.name, index_name(s.name))
    )
    for segment in manifest.segments:
        path = store.archive / segment.name
        assert matching_row_groups(path, segment.events, ["t0"], None) is not None
    await shows_every_event(redis_client, store, log)
