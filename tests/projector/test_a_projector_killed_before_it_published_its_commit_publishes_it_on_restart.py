"""A projector SIGKILLed after its manifest's rename (the commit) and before it published
the position: restarted with nothing new in the log, it publishes the committed position
at once, so whoever waits for it (``crawlog project --wait-for``, a crawl's summary, the
chaos tool) does not wait forever at the end of a job."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from eventlog import EventLog, JobKeys, TaskEnqueued, read_projector_position
from projector import Projector, Store, wait_for_position

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent.parent
EVENTS = 50

# A real projector process that kills itself with SIGKILL right after its first commit's
# manifest is on disk, before it publishes the position.
KILLED_AFTER_COMMIT = """
import os
import signal
import sys
from pathlib import Path

import anyio

from eventlog import connect
from projector._projector import Projector
from projector._store import Store

url, job, data_dir = sys.argv[1:]
commit = Store.commit


def commit_then_die(self, manifest):
    commit(self, manifest)
    os.kill(os.getpid(), signal.SIGKILL)


Store.commit = commit_then_die


async def main():
    async with connect(url) as client:
        async with Projector(client, job, Path(data_dir), commit_events=10_000) as projector:
            await projector.catch_up()
    sys.exit("the projector was never killed")


anyio.run(main)
"""


async def test_a_committed_position_never_published_is_published_on_restart(
    redis_client: aioredis.Redis,
    log: EventLog,
    make_projector: Callable[..., Projector],
    valkey_url: str,
    job: str,
    data_dir: Path,
) -> None:
    ids = await log.append_many(
        [TaskEnqueued(actor="seed", task_id=f"t{n}", url=f"http://s.test/{n}", site="http://s.test")
         for n in range(EVENTS)]
    )  # fmt: skip
    child = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_COMMIT, valkey_url, job, str(data_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == -9, child.stderr[-3000:]
    assert Store(data_dir, job).read_manifest().position == ids[-1], "no commit before the kill"
    assert await read_projector_position(redis_client, JobKeys(job)) is None

    with anyio.fail_after(60):
        async with make_projector():
            assert await wait_for_position(redis_client, job, ids[-1], 50) == ids[-1]
