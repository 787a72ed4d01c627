"""``crawlog shell URL --job J`` of a ``--cookies`` job sends the session the job's jar
holds (a members-only page answers 200), as one more worker would; without ``--job`` it
sends none (403)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import redis.asyncio as aioredis

from crawler._cookies import SharedCookies
from crawler._fetch import Fetcher
from crawler.testsite import LOGIN_PASSWORD, LOGIN_PATH, LOGIN_USER, MEMBERS_PREFIX, serve_testsite
from eventlog import CookieStore, JobKeys
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio
STATUS = "print(response.status)"


async def test_the_shell_sends_the_job_s_session_and_no_job_sends_none(
    start_job: Callable[..., Any],
    redis_client: aioredis.Redis,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    body = urlencode({"user": LOGIN_USER, "password": LOGIN_PASSWORD}).encode()
    form = {"content-type": "application/x-www-form-urlencoded"}
    jar = SharedCookies(CookieStore(redis_client, JobKeys(job)))
    async with serve_testsite(pages=5) as site, Fetcher(cookies=jar) as worker:
        await start_job([site.url + MEMBERS_PREFIX], cookies=True)
        await worker.fetch(site.url + LOGIN_PATH, method="POST", body=body, headers=form)
        page = f"{site.url}{MEMBERS_PREFIX}3"
        with_job = await crawlog(valkey_url, data_dir, "shell", page, "--job", job, "-c", STATUS)
        without = await crawlog(valkey_url, data_dir, "shell", page, "-c", STATUS)
    assert with_job.returncode == 0, with_job.stderr
    assert with_job.stdout.strip() == "200"
    assert without.stdout.strip() == "403", without.stderr
