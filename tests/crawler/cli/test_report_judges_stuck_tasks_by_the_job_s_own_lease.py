"""``crawlog report`` calls a task stuck by the lease the job was crawled with (kept with
the job in its server), not the default 30 s, unless ``--lease`` says otherwise."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.crawler.conftest import run_projector
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_a_job_crawled_with_a_10_s_lease_is_reported_against_10_s(
    start_job: Callable[..., Any], job: str, valkey_url: str, data_dir: Path
) -> None:
    await start_job(["http://127.0.0.1:9/"], lease_ms=10_000)
    with anyio.fail_after(60):
        await run_projector(valkey_url, job, data_dir)
        stored = await crawlog(valkey_url, data_dir, "report", "--job", job)
        told = await crawlog(valkey_url, data_dir, "report", "--job", job, "--lease", "45")
        as_json = await crawlog(valkey_url, data_dir, "report", "--job", job, "--json")
    assert stored.returncode == 0, stored.stderr
    assert "running past the 10 s lease" in stored.stdout
    assert "running past the 45 s lease" in told.stdout
    assert as_json.json()["stuck"]["lease_s"] == 10
