"""Cookies shared through Redis (``--cookies``): a login through one fetcher (one worker)
gives every fetcher of the job the session, the login's redirect hop included; a cookie's
attributes decide where it is sent; without the jar nothing is kept or sent."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlencode

import pytest
import redis.asyncio as aioredis

from crawler._cookies import SharedCookies
from crawler._fetch import Fetcher, FetchResult
from crawler.testsite import (
    ECHO_PREFIX,
    LOGIN_PASSWORD,
    LOGIN_PATH,
    LOGIN_USER,
    MEMBERS_PREFIX,
    SESSION_COOKIE,
    SET_COOKIE_PARAM,
    RunningSite,
    serve_testsite,
)
from eventlog import CookieStore, JobKeys

pytestmark = pytest.mark.anyio
FORM = {"content-type": "application/x-www-form-urlencoded"}


@asynccontextmanager
async def fetcher(store: CookieStore | None) -> AsyncIterator[Fetcher]:
    """A fetcher as a worker of a job builds it: with the job's shared jar, or without."""
    cookies = SharedCookies(store) if store is not None else None
    async with Fetcher(cookies=cookies) as opened:
        yield opened


async def log_in(fetcher: Fetcher, site: RunningSite) -> FetchResult:
    body = urlencode({"user": LOGIN_USER, "password": LOGIN_PASSWORD}).encode()
    return await fetcher.fetch(site.url + LOGIN_PATH, method="POST", body=body, headers=FORM)


def echoed_cookie(result: FetchResult) -> str | None:
    header: str | None = json.loads(result.body)["headers"].get("cookie")
    return header


def set_cookie(site: RunningSite, *cookies: str, path: str = ECHO_PREFIX) -> str:
    return f"{site.url}{path}?" + urlencode([(SET_COOKIE_PARAM, c) for c in cookies])


async def test_a_login_on_one_worker_opens_the_members_pages_to_another(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    store = CookieStore(redis_client, keys)
    async with serve_testsite(pages=5) as site, fetcher(store) as one, fetcher(store) as two:
        login = await log_in(one, site)
        # The 303's Set-Cookie was kept and sent by the next hop, the members' index.
        assert login.redirects == (site.url + MEMBERS_PREFIX,)
        assert login.status == 200, login.body
        member = await two.fetch(f"{site.url}{MEMBERS_PREFIX}7")
        assert member.status == 200 and b"secret of member 7" in member.body
    assert [c.name for c in await store.cookies(site.url)] == [SESSION_COOKIE]
    members = [r for r in site.requests if r.path.startswith(MEMBERS_PREFIX)]
    assert [(r.path, r.status) for r in members] == [
        (MEMBERS_PREFIX, 200),
        (f"{MEMBERS_PREFIX}7", 200),
    ]


async def test_a_cookie_changed_by_one_worker_is_what_the_others_send_next(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    store = CookieStore(redis_client, keys)
    async with serve_testsite(pages=5) as site, fetcher(store) as one, fetcher(store) as two:
        await one.fetch(set_cookie(site, "flavour=oat; Path=/"))
        assert echoed_cookie(await two.fetch(site.url + ECHO_PREFIX)) == "flavour=oat"
        # Both workers have a copy now; a change through the second reaches the first.
        await two.fetch(set_cookie(site, "flavour=rye; Path=/", "size=big; Path=/"))
        assert echoed_cookie(await one.fetch(site.url + ECHO_PREFIX)) == "flavour=rye; size=big"
        # Max-Age=0 deletes it, for every worker.
        await one.fetch(set_cookie(site, "flavour=gone; Path=/; Max-Age=0"))
        assert echoed_cookie(await two.fetch(site.url + ECHO_PREFIX)) == "size=big"


async def test_a_cookie_is_sent_only_where_its_attributes_allow(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    store = CookieStore(redis_client, keys)
    async with (
        serve_testsite(pages=5) as site,
        serve_testsite(pages=5) as elsewhere,
        fetcher(store) as one,
        fetcher(store) as two,
    ):
        await one.fetch(
            set_cookie(
                site,
                "everywhere=1; Path=/",
                "under=2; Path=/echo/under",
                "secure=3; Path=/; Secure",
                "stale=4; Path=/; Expires=Thu, 01 Jan 1970 00:00:10 GMT",
            )
        )
        plain = await two.fetch(site.url + ECHO_PREFIX)
        under = await two.fetch(f"{site.url}{ECHO_PREFIX}/under/page")
        other_site = await two.fetch(elsewhere.url + ECHO_PREFIX)
    assert echoed_cookie(plain) == "everywhere=1"  # no Secure cookie over http
    assert echoed_cookie(under) == "under=2; everywhere=1"
    assert echoed_cookie(other_site) is None  # the jar is the site's, port included
    assert sorted(c.name for c in await store.cookies(site.url)) == [
        "everywhere",
        "secure",
        "under",
    ]


async def test_without_the_shared_jar_no_cookie_is_kept_or_sent(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    async with serve_testsite(pages=5) as site, fetcher(None) as plain:
        login = await log_in(plain, site)
        assert (login.final_url, login.status) == (site.url + MEMBERS_PREFIX, 403)
        await plain.fetch(set_cookie(site, "flavour=oat; Path=/"))
        assert echoed_cookie(await plain.fetch(site.url + ECHO_PREFIX)) is None
    assert await CookieStore(redis_client, keys).sites() == []
