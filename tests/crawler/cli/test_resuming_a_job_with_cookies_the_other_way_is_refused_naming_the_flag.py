"""A job's cookie choice is fixed when it starts: ``crawlog crawl --cookies`` on a job
started without is refused in one line naming ``--cookies`` and both values; a job stored
before the setting existed reads as one without cookies."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
import redis.asyncio as aioredis

from crawler._job import JobConfig, load_config, save_config
from eventlog import JobKeys, store_job_config
from tests.crawler.cli_run import clean_env, crawlog

pytestmark = pytest.mark.anyio
SEED = "http://127.0.0.1:9/"


async def test_turning_cookies_on_for_a_job_started_without_them_is_refused(
    redis_client: aioredis.Redis, valkey_url: str, job: str, tmp_path: Path
) -> None:
    await save_config(redis_client, JobKeys(job), JobConfig(seeds=(SEED,)))
    result = crawlog(
        "crawl", SEED, "--job", job, "--cookies", cwd=tmp_path, env=clean_env(REDIS_URL=valkey_url)
    )
    assert result.returncode == 2, result
    assert "--cookies: off in the job, on asked" in result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr


async def test_a_job_stored_without_the_setting_keeps_no_cookies(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    old = msgspec.msgpack.encode({"seeds": [SEED], "obey_robots": True})
    await store_job_config(redis_client, keys, old)
    assert (await load_config(redis_client, keys)).cookies is False
