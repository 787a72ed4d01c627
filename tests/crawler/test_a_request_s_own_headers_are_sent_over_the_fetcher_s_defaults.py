"""``Fetcher.fetch(headers=...)``: a request's own headers are sent with the fetcher's
defaults, a name given both ways taking the request's value; the next request without
headers of its own sends the defaults alone."""

from __future__ import annotations

import json

import pytest

from crawler._fetch import DEFAULT_USER_AGENT, Fetcher
from crawler.testsite import serve_testsite

pytestmark = pytest.mark.anyio


async def test_own_headers_are_added_and_win_and_do_not_stay() -> None:
    async with serve_testsite(pages=20, seed=1) as site, Fetcher() as fetcher:
        mine = await fetcher.fetch(
            site.url + "/echo/h", headers={"X-Token": "t1", "User-Agent": "mine/1.0"}
        )
        plain = await fetcher.fetch(site.url + "/echo/h")
    sent = json.loads(mine.body)["headers"]
    assert sent["x-token"] == "t1" and sent["user-agent"] == "mine/1.0"
    again = json.loads(plain.body)["headers"]
    assert "x-token" not in again and again["user-agent"] == DEFAULT_USER_AGENT
