"""The test site's interactive pages: ``/echo`` says what the request carried, ``/login``
hands out a session cookie for the right password, ``/members/`` needs it; a body is read
by its Content-Length, and only where a page takes one."""

from __future__ import annotations

import httpx
import pytest

from crawler.testsite import (
    ECHO_PREFIX,
    LOGIN_PASSWORD,
    LOGIN_PATH,
    LOGIN_USER,
    MEMBER_PAGES,
    MEMBERS_PREFIX,
    SESSION_COOKIE,
    serve_testsite,
)

pytestmark = pytest.mark.anyio


async def test_the_echo_page_says_the_method_headers_body_and_form() -> None:
    async with serve_testsite(pages=10) as site, httpx.AsyncClient() as client:
        got = await client.post(
            f"{site.url}{ECHO_PREFIX}/form?x=1",
            data={"q": "shoes", "page": "2"},
            headers={"User-Agent": "probe/1", "X-Trace": "abc"},
        )
        assert got.status_code == 200
        echoed = got.json()
        assert echoed["method"] == "POST"
        assert echoed["path"] == f"{ECHO_PREFIX}/form?x=1"
        assert echoed["headers"]["user-agent"] == "probe/1"
        assert echoed["headers"]["x-trace"] == "abc"
        assert echoed["form"] == {"q": "shoes", "page": "2"}
        assert echoed["body"] == "q=shoes&page=2"
        again = (await client.get(f"{site.url}{ECHO_PREFIX}")).json()
        assert again["method"] == "GET" and again["body"] == ""


async def test_a_body_split_across_packets_is_read_whole() -> None:
    async with serve_testsite(pages=10) as site, httpx.AsyncClient() as client:
        big = "x" * 200_000
        got = await client.post(f"{site.url}{ECHO_PREFIX}", content=big)
        assert got.json()["body"] == big
        # The connection is still in step: the next request is answered as itself.
        assert (await client.get(f"{site.url}/robots.txt")).status_code == 200


async def test_a_post_to_a_generated_page_is_refused_and_the_site_goes_on() -> None:
    async with serve_testsite(pages=10) as site, httpx.AsyncClient() as client:
        refused = await client.post(f"{site.url}/", content=b"a=1")
        assert refused.status_code == 405
        assert (await client.get(f"{site.url}/")).status_code == 200


async def test_members_pages_need_the_session_the_login_hands_out() -> None:
    async with serve_testsite(pages=10) as site, httpx.AsyncClient() as client:
        assert (await client.get(f"{site.url}{MEMBERS_PREFIX}1")).status_code == 403
        form = (await client.get(f"{site.url}{LOGIN_PATH}")).text
        assert 'method="post"' in form and 'name="password"' in form
        wrong = await client.post(
            f"{site.url}{LOGIN_PATH}", data={"user": LOGIN_USER, "password": "guess"}
        )
        assert wrong.status_code == 403 and SESSION_COOKIE not in client.cookies
        right = await client.post(
            f"{site.url}{LOGIN_PATH}", data={"user": LOGIN_USER, "password": LOGIN_PASSWORD}
        )
        assert right.status_code == 303
        assert right.headers["location"] == MEMBERS_PREFIX
        assert SESSION_COOKIE in client.cookies
        index = await client.get(f"{site.url}{MEMBERS_PREFIX}")
        assert index.status_code == 200
        assert index.text.count(f'href="{MEMBERS_PREFIX}') == MEMBER_PAGES
        page = await client.get(f"{site.url}{MEMBERS_PREFIX}{MEMBER_PAGES}")
        assert page.status_code == 200 and "secret of member" in page.text
        missing = await client.get(f"{site.url}{MEMBERS_PREFIX}{MEMBER_PAGES + 1}")
        assert missing.status_code == 404
