"""A projector SIGKILLed at the worst moments of a commit that moves item keys to the key
store.

Right after it wrote a key segment (and the snapshot without those keys) but before the
manifest that names it, and right after it wrote a merged key segment but before the
manifest of that merge: restarted, it ends with every event archived once, each item key
counted once (keys scraped again long after, from the store, are duplicates; none is
counted twice or lost), and the state a fold of the whole log gives, bit for bit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from eventlog import (
    EventLog,
    ItemScraped,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
)
from projector._archive import read_entries
from projector._committed import read_committed
from projector._fold import fold
from projector._projector import Projector
from projector._replay import verify
from projector._state import canonical
from projector._store import Store

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent.parent
SITE = "http://site.test"
TASKS = 8_000
AGAIN = 500
"""Tasks (the last ones) that scrape, besides their own key, a key of a task long done."""

# A real projector process that kills itself with SIGKILL where a commit is about to
# replace the manifest: when that manifest names its third key segment, two committed
# already ("new"), or a merged one ("merged"). Everything before the manifest's rename is
# on disk by then.
KILLED_PROJECTOR = """
import os
import signal
import sys
from pathlib import Path

import anyio

from eventlog import connect
from projector._projector import Projector
from projector._store import Store

url, job, data_dir, moment = sys.argv[1:]
commit = Store.commit


def commit_or_die(self, manifest):
    names = [s.name for s in manifest.key_segments]
    before = {s.name for s in self.read_manifest().key_segments}
    new = [n for n in names if n not in before]
    merged = any("-m" in n for n in new)
    if new and (merged if moment == "merged" else len(names) == 3):
        os.kill(os.getpid(), signal.SIGKILL)
    commit(self, manifest)


Store.commit = commit_or_die


async def main():
    async with connect(url) as client:
        projector = Projector(
            client, job, Path(data_dir), commit_events=400, snapshot_interval_s=0
        )
        async with projector:
            await projector.catch_up()
    sys.exit("the projector was never killed")


anyio.run(main)
"""


def scraping(n: int) -> list[TaskEnqueued | TaskClaimed | ItemScraped | TaskDone]:
    t = f"t{n}"
    keys = [f"{SITE}/item/{n}"]
    if n >= TASKS - AGAIN:
        keys.append(f"{SITE}/item/{n - TASKS + AGAIN}")  # scraped by a task long done
    return [
        TaskEnqueued(actor="seed", task_id=t, url=f"{SITE}/{t}", site=SITE),
        TaskClaimed(actor="w1", task_id=t, attempt=1),
        *(ItemScraped(actor="w1", task_id=t, key=key) for key in keys),
        TaskDone(actor="w1", task_id=t, attempt=1),
    ]


async def project_killed_then_restarted(
    moment: str,
    log: EventLog,
    make_projector: Callable[..., Projector],
    valkey_url: str,
    job: str,
    data_dir: Path,
) -> None:
    events = [e for n in range(TASKS) for e in scraping(n)]
    for start in range(0, len(events), 2_000):
        await log.append_many(events[start : start + 2_000])
    child = subprocess.run(
        [sys.executable, "-c", KILLED_PROJECTOR, valkey_url, job, str(data_dir), moment],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert child.returncode == -9, child.stderr[-3000:]
    store = Store(data_dir, job)
    committed = {s.name for s in store.read_manifest().key_segments}
    left = set(os.listdir(store.keys)) - committed
    assert left, "the kill came after the manifest, not between the files and it"

    async with make_projector(commit_events=400, snapshot_interval_s=0) as projector:
        await projector.catch_up()
        # Only the keys scraped since the last snapshot are in memory.
        assert len(projector.state.item_keys) < TASKS // 2
    manifest = store.read_manifest()
    archived = [e for path in store.segment_paths(manifest) for e in read_entries(path)]
    logged = await log.read_range()
    assert [e.stream_id for e in archived] == [e.stream_id for e in logged]
    _, state = read_committed(store)
    assert canonical(state) == canonical(fold(logged))
    assert (state.job.items, state.job.duplicate_items) == (TASKS, AGAIN)
    assert len(state.item_keys) == TASKS
    assert verify(store) == (state.position, [])
    assert sorted(os.listdir(store.keys)) == sorted(s.name for s in manifest.key_segments)
    assert sum(s.keys for s in manifest.key_segments) == TASKS


@pytest.mark.timeout(120)
async def test_a_projector_killed_after_its_key_segment_before_its_manifest_counts_each_key_once(
    log: EventLog,
    make_projector: Callable[..., Projector],
    valkey_url: str,
    job: str,
    data_dir: Path,
) -> None:
    await project_killed_then_restarted("new", log, make_projector, valkey_url, job, data_dir)


@pytest.mark.timeout(120)
async def test_a_projector_killed_while_it_merges_key_segments_counts_each_key_once(
    log: EventLog,
    make_projector: Callable[..., Projector],
    valkey_url: str,
    job: str,
    data_dir: Path,
) -> None:
    await project_killed_then_restarted("merged", log, make_projector, valkey_url, job, data_dir)
