"""A projector killed with SIGKILL at random moments neither loses nor double-counts."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process

from eventlog import EventLog, LogEntry, encode
from projector._archive import read_entries
from projector._fold import fold
from projector._projector import wait_for_position
from projector._state import canonical
from projector._store import Store
from tests.projector.test_projector import task_events

pytestmark = pytest.mark.anyio
ROUNDS = 4
TASKS = 1500  # four events each
BATCH = 40


def projector_command(valkey_url: str, job: str, data_dir: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "crawler.cli", "project", "--job", job, "--data-dir", str(data_dir),
        "--commit-interval", "0.02", "--snapshot-interval", "0.1", "--keep-tail", "0", *extra,
    ]  # fmt: skip


async def test_projector_killed_at_random_ends_identical_to_a_fold_of_the_log(
    valkey_url: str, job: str, log: EventLog, data_dir: Path
) -> None:
    rng = random.Random(7)
    events = [e for n in range(TASKS) for e in task_events(n)]
    appended: list[LogEntry] = []
    env = {**os.environ, "REDIS_URL": valkey_url}

    async def append(start: int) -> None:
        batch = events[start : start + BATCH]
        ids = await log.append_many(batch)
        appended.extend(LogEntry(i, e, encode(e)) for i, e in zip(ids, batch, strict=True))  # type: ignore[arg-type]

    async def append_the_rest() -> None:
        for start in range(BATCH, len(events), BATCH):
            await append(start)
            await anyio.sleep(0.002)  # a steady stream, not one burst

    await append(0)
    with anyio.fail_after(90):
        async with anyio.create_task_group() as tg:
            tg.start_soon(append_the_rest)
            for _ in range(ROUNDS):
                process: Process = await anyio.open_process(
                    projector_command(valkey_url, job, data_dir), env=env,
                    stdout=subprocess.DEVNULL,
                )  # fmt: skip
                try:
                    # Once it is projecting (it committed what was appended when it started),
                    # the kill lands wherever it happens to be: reading, folding, committing.
                    assert await wait_for_position(log.redis, job, appended[-1].stream_id, 10)
                    await anyio.sleep(rng.uniform(0, 0.1))
                finally:
                    process.send_signal(signal.SIGKILL)
                    await process.wait()
        await anyio.run_process(projector_command(valkey_url, job, data_dir, "--once"), env=env)

    store = Store(data_dir, job)
    manifest = store.read_manifest()
    archived = [e for p in store.segment_paths(manifest) for e in read_entries(p)]
    assert [e.stream_id for e in archived] == [e.stream_id for e in appended], "once, in order"
    assert manifest.events == len(events)
    live = store.read_snapshot(manifest)
    assert canonical(live) == canonical(fold(appended))
    replay = [sys.executable, "-m", "crawler.cli", "replay", "--job", job, "--verify"]
    verify = await anyio.run_process([*replay, "--data-dir", str(data_dir)], env=env, check=False)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert b"identical" in verify.stdout
