"""A projector stalled (SIGSTOP) past its lease, while another took the job, finds it lost
when it runs again: it neither commits what it read nor publishes nor trims the log, and
stops in one line. One stalled while nobody took the job or committed takes its lease back
and goes on."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from eventlog import EventLog, JobKeys, hold_projector_lease, read_projector_position
from projector import Store, wait_for_position
from tests.projector.conftest import killed_at_exit

pytestmark = pytest.mark.anyio
LEASE = ("--lease", "0.6", "--keep-tail", "0", "--commit-interval", "0.1")


async def _until_the_lease_lapses(redis_client: aioredis.Redis, keys: JobKeys) -> None:
    with anyio.fail_after(20):
        while await redis_client.exists(keys.projector_lease):
            await anyio.sleep(0.05)


async def test_a_projector_stalled_past_its_lease_neither_commits_nor_trims(
    redis_client: aioredis.Redis,
    job: str,
    log: EventLog,
    tmp_path: Path,
    seed_events: Callable[[int, int], Awaitable[list[str]]],
    project_command: Callable[..., list[str]],
    project_env: dict[str, str],
) -> None:
    keys = JobKeys(job)
    ids = await seed_events(0, 30)
    data = tmp_path / "stalled"
    stalled = await anyio.open_process(
        project_command(data, *LEASE), env=project_env, stderr=subprocess.PIPE
    )
    async with killed_at_exit(stalled):
        with anyio.fail_after(60):
            assert await wait_for_position(redis_client, job, ids[-1], 60) == ids[-1]
        committed = Store(data, job).read_manifest().position
        stalled.send_signal(signal.SIGSTOP)
        more = await seed_events(30, 20)
        length = await log.length()
        await _until_the_lease_lapses(redis_client, keys)
        async with hold_projector_lease(redis_client, keys, "/elsewhere"):
            stalled.send_signal(signal.SIGCONT)
            with anyio.fail_after(60):
                code = await stalled.wait()
            assert stalled.stderr is not None
            said = (await stalled.stderr.receive()).decode()
    assert code == 2, said
    assert said.startswith(f"crawlog: error: the projector of job {job!r} with data directory")
    assert "lost its lease" in said and len(said.splitlines()) == 1, said
    assert Store(data, job).read_manifest().position == committed == ids[-1]
    assert await read_projector_position(redis_client, keys) == committed
    assert await log.length() == length, "nothing trimmed"
    assert (await log.read_after(committed, 100))[-1].stream_id == more[-1]


async def test_a_projector_stalled_while_nobody_took_the_job_goes_on(
    redis_client: aioredis.Redis,
    job: str,
    tmp_path: Path,
    seed_events: Callable[[int, int], Awaitable[list[str]]],
    project_command: Callable[..., list[str]],
    project_env: dict[str, str],
) -> None:
    keys = JobKeys(job)
    ids = await seed_events(0, 30)
    data = tmp_path / "stalled"
    stalled = await anyio.open_process(project_command(data, *LEASE), env=project_env)
    async with killed_at_exit(stalled):
        with anyio.fail_after(60):
            assert await wait_for_position(redis_client, job, ids[-1], 60) == ids[-1]
        stalled.send_signal(signal.SIGSTOP)
        more = await seed_events(30, 20)
        await _until_the_lease_lapses(redis_client, keys)
        stalled.send_signal(signal.SIGCONT)
        with anyio.fail_after(60):
            assert await wait_for_position(redis_client, job, more[-1], 60) == more[-1]
        assert await redis_client.exists(keys.projector_lease)
        stalled.terminate()
        assert await stalled.wait() == 0
    assert Store(data, job).read_manifest().position == more[-1]
