"""A projector whose archive ends before what the log was trimmed to (another machine's
data directory, a restored older copy) refuses instead of skipping the events it lacks,
and says where they are: the data directory of the projector that trimmed them."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from eventlog import EventLog
from projector import Store

pytestmark = pytest.mark.anyio


async def test_a_projector_whose_archive_is_behind_the_trim_refuses(
    redis_client: aioredis.Redis,
    job: str,
    log: EventLog,
    tmp_path: Path,
    seed_events: Callable[[int, int], Awaitable[list[str]]],
    project_command: Callable[..., list[str]],
    project_env: dict[str, str],
) -> None:
    ids = await seed_events(0, 30)
    first, other = tmp_path / "first", tmp_path / "other"
    trimmed = await anyio.run_process(
        project_command(first, "--once", "--keep-tail", "0"), env=project_env, check=False
    )
    assert trimmed.returncode == 0, trimmed.stderr
    info = await log.stream_info()
    assert info is not None and info.length == 1, "trimmed below its commit"

    refused = await anyio.run_process(
        project_command(other, "--once"), env=project_env, check=False
    )
    lines = refused.stderr.decode().splitlines()
    assert refused.returncode == 2, refused.stderr
    assert len(lines) == 1, lines
    root = Store(other, job).root
    assert lines[0].startswith(
        f"crawlog: error: the archive of job {job!r} in {root} is empty, but the job's log "
        f"was trimmed past it (29 events trimmed, the first left is {ids[-1]})"
    ), lines[0]
    assert f"host {socket.gethostname()}" in lines[0]
    assert f"--data-dir {first.resolve()}" in lines[0]
    assert Store(other, job).read_manifest().position == "0-0"

    # The archive it lacks, copied from the projector that has it: then it goes on.
    await seed_events(30, 5)
    shutil.rmtree(root)
    shutil.copytree(Store(first, job).root, root)
    again = await anyio.run_process(project_command(other, "--once"), env=project_env, check=False)
    assert again.returncode == 0, again.stderr
    assert Store(other, job).read_manifest().events == 35
