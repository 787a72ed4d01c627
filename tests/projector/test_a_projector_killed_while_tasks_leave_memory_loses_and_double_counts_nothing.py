"""A projector SIGKILLed at the worst moments of a commit that moves tasks to the task store.

Right after it wrote a task segment (and the snapshot without those tasks) but before the
manifest that names them, and right after it wrote a merged task segment but before the
manifest of that compaction: restarted, it ends with every event archived once and the
state a fold of the whole log gives, bit for bit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from eventlog import EventLog, TaskClaimed, TaskDone, TaskEnqueued, TaskRetried
from projector._archive import read_entries
from projector._committed import read_committed
from projector._fold import fold
from projector._projector import Projector
from projector._replay import verify
from projector._state import canonical
from projector._store import Store
from tests.projector.test_projector import task_events

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent.parent
SITE = "http://site.test"

# A real projector process that kills itself with SIGKILL where a commit is about to
# replace the manifest: when that manifest names its third task segment, two committed
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
    names = [s.name for s in manifest.task_segments]
    before = {s.name for s in self.read_manifest().task_segments}
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


def retried(n: int) -> list[TaskRetried | TaskClaimed | TaskDone]:
    t = f"t{n}"
    return [
        TaskRetried(actor="operator", task_id=t, reason="try again"),
        TaskClaimed(actor="w1", task_id=t, attempt=2),
        TaskDone(actor="w1", task_id=t, attempt=2),
    ]


async def project_killed_then_restarted(
    moment: str,
    log: EventLog,
    make_projector: Callable[..., Projector],
    valkey_url: str,
    job: str,
    data_dir: Path,
) -> None:
    events = [e for n in range(6_000) for e in task_events(n)]
    # Tasks done long before, retried by an operator: stored by then, brought back.
    events += [e for n in (3, 500, 4_500) for e in retried(n)]
    events += [
        TaskEnqueued(actor="seed", task_id=f"live{n}", url=f"{SITE}/l{n}", site=SITE)
        for n in range(50)
    ]
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
    committed = {s.name for s in store.read_manifest().task_segments}
    left = set(os.listdir(store.tasks)) - committed
    assert left, "the kill came after the manifest, not between the files and it"

    async with make_projector() as projector:
        await projector.catch_up()
    manifest = store.read_manifest()
    archived = [e for path in store.segment_paths(manifest) for e in read_entries(path)]
    logged = await log.read_range()
    assert [e.stream_id for e in archived] == [e.stream_id for e in logged]
    assert manifest.events == len(logged)
    _, state = read_committed(store)
    assert canonical(state) == canonical(fold(logged))
    assert state.tasks["t500"].attempt == 2 and state.tasks["t500"].status == "done"
    assert verify(store) == (state.position, [])
    assert sorted(os.listdir(store.tasks)) == sorted(s.name for s in manifest.task_segments)


@pytest.mark.timeout(120)
async def test_a_projector_killed_after_its_task_segment_before_its_manifest_loses_nothing(
    log: EventLog,
    make_projector: Callable[..., Projector],
    valkey_url: str,
    job: str,
    data_dir: Path,
) -> None:
    await project_killed_then_restarted("new", log, make_projector, valkey_url, job, data_dir)


@pytest.mark.timeout(120)
async def test_a_projector_killed_while_it_merges_task_segments_loses_nothing(
    log: EventLog,
    make_projector: Callable[..., Projector],
    valkey_url: str,
    job: str,
    data_dir: Path,
) -> None:
    await project_killed_then_restarted("merged", log, make_projector, valkey_url, job, data_dir)
