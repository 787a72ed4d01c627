"""After a real crawl and its projection, an archive segment deleted: `report`, `status` and
`jobs` still answer, and each says in one line on stderr which file the manifest names is
missing and what to run; once `replay --from-redis` wrote it again, none of them says so."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import RunningSite, serve_testsite
from projector import Store
from tests.crawler.cli_run import clean_env, crawlog
from tests.crawler.conftest import run_projector

pytestmark = pytest.mark.anyio


@pytest.fixture
async def site() -> AsyncIterator[RunningSite]:
    async with serve_testsite(pages=12, seed=3) as running:
        yield running


async def test_a_missing_segment_is_one_warning_line_until_it_is_written_again(
    valkey_url: str,
    job: str,
    data_dir: Path,
    site: RunningSite,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
) -> None:
    await start_job([site.url + "/"])
    with anyio.fail_after(60):
        worker = await worker_process("w1", "--exit-when-done")
        await worker.wait()
    await run_projector(valkey_url, job, data_dir)
    store = Store(data_dir, job)
    lost = store.segment_paths(store.read_manifest())[0]
    lost.unlink()

    env = clean_env(REDIS_URL=valkey_url)
    where = ("--data-dir", str(data_dir))
    commands = [("report", "--job", job), ("status", "--job", job), ("jobs",)]
    for command in commands:
        result = await anyio.to_thread.run_sync(lambda c=command: crawlog(*c, *where, env=env))
        assert result.returncode == 0, result.stderr
        warnings = [line for line in result.stderr.splitlines() if "warning" in line]
        assert len(warnings) == 1, result.stderr
        assert f"{lost} is missing" in warnings[0] and "--from-redis" in warnings[0]

    rebuilt = crawlog("replay", "--job", job, "--from-redis", "--verify", *where, env=env)
    assert rebuilt.returncode == 0 and "identical" in rebuilt.stdout, rebuilt.stdout
    assert lost.exists()
    for command in commands:
        result = await anyio.to_thread.run_sync(lambda c=command: crawlog(*c, *where, env=env))
        assert result.returncode == 0 and "warning" not in result.stderr, result.stderr
