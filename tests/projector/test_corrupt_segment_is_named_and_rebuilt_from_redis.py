"""An archive segment truncated, overwritten or lost: `replay` names the file, and
`replay --from-redis` rewrites it from the stream while Redis still holds its events —
after which the replay is identical to the live state again."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from eventlog import EventLog
from projector._projector import Projector
from projector._store import Store
from tests.projector.test_projector import task_events

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]


async def crawlog(valkey_url: str, data_dir: Path, *args: str) -> tuple[int, str]:
    command = crawlog_command(*args, "--data-dir", str(data_dir))
    env = {**os.environ, "REDIS_URL": valkey_url}
    with anyio.fail_after(60):
        done = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
    assert done.returncode is not None
    return done.returncode, (done.stdout + done.stderr).decode()


def damage(paths: list[Path]) -> None:
    """Three ways a file goes bad: cut short, bytes overwritten, gone."""
    truncated, overwritten, lost = paths[0], paths[1], paths[2]
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size // 2])
    data = bytearray(overwritten.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = b"\x00" * 64
    overwritten.write_bytes(bytes(data))
    lost.unlink()


async def archived_job(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> list[Path]:
    for n in range(5):  # five commits, five segments
        await log.append_many([e for t in range(40 * n, 40 * n + 40) for e in task_events(t)])
        async with make_projector(keep_tail_s=None) as projector:
            await projector.catch_up()
    store = Store(data_dir, job)
    paths = store.segment_paths(store.read_manifest())
    assert len(paths) == 5
    return paths


async def test_damaged_segments_are_named_and_rebuilt_from_redis(
    log: EventLog,
    make_projector: Callable[..., Projector],
    data_dir: Path,
    job: str,
    valkey_url: str,
) -> None:
    paths = await archived_job(log, make_projector, data_dir, job)
    damage(paths[1:4])

    code, out = await crawlog(valkey_url, data_dir, "replay", "--job", job, "--verify")
    assert code != 0 and paths[1].name in out and "--from-redis" in out, out

    code, out = await crawlog(
        valkey_url, data_dir, "replay", "--job", job, "--from-redis", "--verify"
    )
    assert code == 0, out
    assert "3 damaged archive segment(s) rebuilt" in out and "identical" in out, out
    assert all(path.name in out for path in paths[1:4])
    # The projector carries on from the repaired archive.
    await log.append_many(task_events(999))
    async with make_projector(keep_tail_s=None) as projector:
        await projector.catch_up()
    assert projector.state.job.tasks["done"] == 201


async def test_a_damaged_segment_whose_events_left_redis_cannot_be_rebuilt(
    log: EventLog,
    make_projector: Callable[..., Projector],
    data_dir: Path,
    job: str,
    valkey_url: str,
) -> None:
    paths = await archived_job(log, make_projector, data_dir, job)
    damage(paths[0:3])
    last = Store(data_dir, job).read_manifest().segments[0].last_id
    await log.redis.xtrim(log.keys.events, minid=last)  # events of the first segment gone

    code, out = await crawlog(valkey_url, data_dir, "replay", "--job", job, "--from-redis")
    assert code != 0
    lines = out.strip().splitlines()
    assert len(lines) == 1 and paths[0].name in lines[0] and "backup" in lines[0], out
