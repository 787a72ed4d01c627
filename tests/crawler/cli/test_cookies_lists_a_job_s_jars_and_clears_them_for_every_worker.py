"""``crawlog cookies --job J`` lists the cookies a ``--cookies`` job keeps (values cut,
expiry from now, flags); ``--site S --clear`` empties that site's jar, and a worker that had
the session sends it no more."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import redis.asyncio as aioredis

from crawler._cookies import SharedCookies
from crawler._fetch import Fetcher
from crawler.testsite import (
    LOGIN_PASSWORD,
    LOGIN_PATH,
    LOGIN_USER,
    MEMBERS_PREFIX,
    SESSION_COOKIE,
    serve_testsite,
)
from eventlog import CookieStore, JobKeys
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_the_jar_is_listed_then_cleared_and_the_session_is_gone_for_every_worker(
    start_job: Callable[..., Any],
    redis_client: aioredis.Redis,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    store = CookieStore(redis_client, JobKeys(job))
    body = urlencode({"user": LOGIN_USER, "password": LOGIN_PASSWORD}).encode()
    form = {"content-type": "application/x-www-form-urlencoded"}
    async with serve_testsite(pages=5) as site, Fetcher(cookies=SharedCookies(store)) as worker:
        await start_job([site.url + MEMBERS_PREFIX], cookies=True)
        await worker.fetch(site.url + LOGIN_PATH, method="POST", body=body, headers=form)
        assert (await worker.fetch(f"{site.url}{MEMBERS_PREFIX}1")).status == 200

        listed = await crawlog(valkey_url, data_dir, "cookies", "--job", job)
        assert listed.returncode == 0, listed.stderr
        (row,) = [line for line in listed.stdout.splitlines() if SESSION_COOKIE in line]
        assert row.split()[:2] == [site.url, SESSION_COOKIE]
        assert MEMBERS_PREFIX in row and "httponly" in row
        assert "59m" in row or "1h00m" in row  # Max-Age=3600, counted from now

        host = site.url.split("://", 1)[1]
        cleared = await crawlog(
            valkey_url, data_dir, "cookies", "--job", job, "--site", host, "--clear"
        )
        assert cleared.returncode == 0, cleared.stderr
        assert f"cleared the jar of {site.url}: 1 cookie(s) dropped" in cleared.stdout
        # The worker's copy of the jar is out of date: its next request finds that out.
        assert (await worker.fetch(f"{site.url}{MEMBERS_PREFIX}2")).status == 403
    assert await store.sites() == []
    empty = await crawlog(valkey_url, data_dir, "cookies", "--job", job)
    assert empty.stdout.strip() == f"no cookies kept for job {job}"
