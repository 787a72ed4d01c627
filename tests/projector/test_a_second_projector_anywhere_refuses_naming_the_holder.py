"""One projector per job wherever it runs: a second projector of the same job with another
data directory (another machine, one REDIS_URL) refuses in one line naming the holder
(host, pid, data directory, since when), and commits nothing; the holder goes on."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from projector import Store, wait_for_position
from tests.projector.conftest import killed_at_exit

pytestmark = pytest.mark.anyio


async def test_a_second_projector_anywhere_refuses_naming_the_holder(
    redis_client: aioredis.Redis,
    job: str,
    tmp_path: Path,
    seed_events: Callable[[int, int], Awaitable[list[str]]],
    project_command: Callable[..., list[str]],
    project_env: dict[str, str],
) -> None:
    ids = await seed_events(0, 40)
    first, second = tmp_path / "first", tmp_path / "second"
    holder = await anyio.open_process(
        project_command(first, "--commit-interval", "0.2"),
        env=project_env,
        stderr=subprocess.PIPE,
    )
    async with killed_at_exit(holder):
        with anyio.fail_after(60):
            assert await wait_for_position(redis_client, job, ids[-1], 60) == ids[-1]
        refused = await anyio.run_process(
            project_command(second, "--once"), env=project_env, check=False
        )
        lines = refused.stderr.decode().splitlines()
        assert refused.returncode == 2, refused.stderr
        assert len(lines) == 1, lines
        assert lines[0].startswith(
            f"crawlog: error: another projector holds job {job!r} (host {socket.gethostname()}, "
            f"pid {holder.pid}, data directory {first.resolve()}, since "
        ), lines[0]
        assert Store(second, job).read_manifest().position == "0-0", "it committed nothing"
        # The holder goes on projecting.
        more = await seed_events(40, 10)
        with anyio.fail_after(60):
            assert await wait_for_position(redis_client, job, more[-1], 60) == more[-1]
        holder.terminate()
        assert await holder.wait() == 0
