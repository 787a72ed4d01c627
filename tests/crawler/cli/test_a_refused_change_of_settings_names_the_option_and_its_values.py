"""``crawlog crawl`` on an existing job with other options is refused in one line that names
each option that differs, with the job's value and the value asked, as the user types them."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.asyncio as aioredis

from crawler._job import JobConfig, save_config
from eventlog import JobKeys
from tests.crawler.cli_run import clean_env, crawlog

pytestmark = pytest.mark.anyio
SEED = "http://127.0.0.1:9/"


async def test_a_changed_delay_is_named_as_the_option_with_both_values(
    redis_client: aioredis.Redis, valkey_url: str, job: str, tmp_path: Path
) -> None:
    await save_config(redis_client, JobKeys(job), JobConfig(seeds=(SEED,)))

    result = crawlog(
        "crawl",
        SEED,
        "--job",
        job,
        "--delay",
        "1.5",
        "--per-host",
        "4",
        cwd=tmp_path,
        env=clean_env(REDIS_URL=valkey_url),
    )

    assert result.returncode == 2, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith(f"crawlog: error: job {job!r} already exists with other settings")
    assert "--delay: 0 in the job, 1.5 asked" in line
    assert "--per-host: 2 in the job, 4 asked" in line
    assert "Politeness(" not in line


async def test_flags_and_seconds_read_as_the_options_do(
    redis_client: aioredis.Redis, valkey_url: str, job: str, tmp_path: Path
) -> None:
    await save_config(redis_client, JobKeys(job), JobConfig(seeds=(SEED,)))

    result = crawlog(
        "crawl",
        SEED,
        "--job",
        job,
        "--ignore-robots",
        "--lease",
        "12.5",
        cwd=tmp_path,
        env=clean_env(REDIS_URL=valkey_url),
    )

    assert result.returncode == 2, result
    assert "--ignore-robots: off in the job, on asked" in result.stderr
    assert "--lease: 30 in the job, 12.5 asked" in result.stderr
