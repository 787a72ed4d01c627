"""A redirect of a POST: after a 301, 302 or 303 the fetch continues as a GET without the
body (as browsers do), after a 307 or 308 it repeats the method and the body. The echo page
of the test site says what the redirected request was."""

from __future__ import annotations

import json

import pytest

from crawler._fetch import Fetcher
from crawler.testsite import serve_testsite
from tests.crawler.hostile_site import Route, serve_hostile

pytestmark = pytest.mark.anyio
FORM = "application/x-www-form-urlencoded"


@pytest.mark.parametrize(
    ("status", "method", "body"),
    [
        (301, "GET", ""),
        (302, "GET", ""),
        (303, "GET", ""),
        (307, "POST", "q=a"),
        (308, "POST", "q=a"),
    ],
)
async def test_a_posted_form_redirected(status: int, method: str, body: str) -> None:
    async with serve_testsite(pages=20, seed=1) as site:
        target = site.url + "/echo/after"
        routes = {"/moved": Route(status=status, headers=(("Location", target),))}
        async with serve_hostile(routes) as hostile, Fetcher() as fetcher:
            result = await fetcher.fetch(
                hostile.url + "/moved",
                method="POST",
                body=b"q=a",
                headers={"Content-Type": FORM, "X-Mine": "kept"},
            )
        served = [(r.method, r.path) for r in site.requests]
    assert result.error is None and result.status == 200
    assert result.redirects == (target,)
    echoed = json.loads(result.body)
    assert (echoed["method"], echoed["body"]) == (method, body)
    assert served == [(method, "/echo/after")]
    # The request's own headers go on; what described a body goes with the body.
    assert echoed["headers"]["x-mine"] == "kept"
    assert ("content-type" in echoed["headers"]) == (method == "POST")


async def test_a_get_s_redirect_of_a_303_stays_a_get_and_a_head_stays_a_head() -> None:
    async with serve_testsite(pages=20, seed=1) as site:
        target = site.url + "/echo/after"
        routes = {"/moved": Route(status=303, headers=(("Location", target),))}
        async with serve_hostile(routes) as hostile, Fetcher() as fetcher:
            await fetcher.fetch(hostile.url + "/moved", method="HEAD")
            got = await fetcher.fetch(hostile.url + "/moved")
        served = [(r.method, r.path) for r in site.requests]
    assert json.loads(got.body)["method"] == "GET"
    assert served == [("HEAD", "/echo/after"), ("GET", "/echo/after")]
