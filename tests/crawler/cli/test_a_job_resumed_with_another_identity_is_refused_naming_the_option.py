"""A job keeps the identity it was started with: ``crawlog crawl`` on an existing job with
another user agent, other headers, proxies, timeouts or retry settings is refused in one
line naming each option with the job's value and the one asked (a proxy's password not
shown), so no worker of one job fetches differently from another."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.asyncio as aioredis

from crawler._defaults import DEFAULT_MAX_PAGES
from crawler._job import JobConfig, save_config
from eventlog import JobKeys
from tests.crawler.cli_run import clean_env, crawlog

pytestmark = pytest.mark.anyio
SEED = "http://127.0.0.1:9/"


async def test_each_changed_identity_option_is_named_with_both_values(
    redis_client: aioredis.Redis, valkey_url: str, job: str, tmp_path: Path
) -> None:
    stored = JobConfig(
        seeds=(SEED,),
        user_agent="first/1.0",
        headers=(("Accept-Language", "en"),),
        proxies=("http://u:secret@127.0.0.1:3128",),
    )
    await save_config(redis_client, JobKeys(job), stored)

    result = crawlog(
        "crawl", SEED, "--job", job,
        "--user-agent", "second/2.0",
        "--header", "Accept-Language: fr",
        "--proxy", "http://127.0.0.1:3129",
        "--retries", "1",
        "--retry-on", "503",
        "--timeout", "5",
        "--backoff-cap", "3",
        cwd=tmp_path, env=clean_env(REDIS_URL=valkey_url),
    )  # fmt: skip

    assert result.returncode == 2, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert "--user-agent: first/1.0 in the job, second/2.0 asked" in line
    assert "--header: Accept-Language: en in the job, Accept-Language: fr asked" in line
    assert "--proxy: http://u:***@127.0.0.1:3128 in the job, http://127.0.0.1:3129 asked" in line
    assert "--retries: 3 in the job, 1 asked" in line
    assert "--retry-on: 429,500,502-504 in the job, 503 asked" in line
    assert "--timeout: 60 in the job, 5 asked" in line
    assert "--backoff-cap: 30 in the job, 3 asked" in line
    assert "secret" not in line


async def test_the_same_identity_resumes_the_job(
    redis_client: aioredis.Redis, valkey_url: str, job: str, tmp_path: Path
) -> None:
    stored = JobConfig(
        seeds=(SEED,),
        user_agent="first/1.0",
        headers=(("X-A", "1"),),
        max_attempts=1,
        max_pages=DEFAULT_MAX_PAGES,  # as `crawl` stores it without --max-pages
    )
    await save_config(redis_client, JobKeys(job), stored)

    result = crawlog(
        "crawl", SEED, "--job", job, "--user-agent", "first/1.0", "--header", "X-A: 1",
        "--retries", "0", "--fail-on", "never", "--workers", "1",
        "--data-dir", str(tmp_path / "data"),
        cwd=tmp_path, env=clean_env(REDIS_URL=valkey_url),
    )  # fmt: skip

    # Nothing listens at the seed: the task fails at once, and the crawl finishes.
    assert result.returncode == 0, result.stderr
    assert f"finished {job}" in result.stdout, result.stdout
