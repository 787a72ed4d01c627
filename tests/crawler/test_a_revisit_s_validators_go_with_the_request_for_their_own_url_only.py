"""A revisit's conditional headers (``If-None-Match``, ``If-Modified-Since``) go with the
request for the URL they are of only: the task's own, or the URL its earlier fetch landed on
after a redirect (``validators_of``), not a redirect's other target. They belong to their
resource (RFC 9110, section 15.4): sent on, a 304 from another URL said a page that had
moved was unchanged, and it was not parsed at its new URL."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from crawler._fetch import Fetcher
from tests.crawler.hostile_site import HostileSite, Route, redirect_to, serve_hostile

pytestmark = pytest.mark.anyio

VALIDATORS = {"If-None-Match": '"v1"', "If-Modified-Since": "Sun, 06 Dec 2026 10:00:00 GMT"}


@pytest.fixture
async def site() -> AsyncIterator[HostileSite]:
    routes = {"/own": Route(b"own"), "/moved": redirect_to("/new"), "/new": Route(b"new")}
    routes |= {"/slash": redirect_to("/slash/"), "/slash/": Route(b"slash")}
    async with serve_hostile(routes) as served:
        yield served


def sent_validators(site: HostileSite) -> dict[str, bool]:
    """Each requested path: whether its request carried both validators."""
    return {
        head.split(" ", 2)[1]: "if-none-match:" in head.lower()
        and "if-modified-since:" in head.lower()
        for head in site.heads
    }


async def test_validators_go_with_their_own_url_and_not_to_a_redirect_s_other_target(
    site: HostileSite,
) -> None:
    async with Fetcher() as fetcher:
        own = await fetcher.fetch(site.url + "/own", headers=VALIDATORS)
        moved = await fetcher.fetch(site.url + "/moved", headers=VALIDATORS)
    assert own.status == 200 and moved.status == 200
    assert sent_validators(site) == {"/own": True, "/moved": True, "/new": False}


async def test_validators_of_an_earlier_landing_go_with_the_redirect_to_it_only(
    site: HostileSite,
) -> None:
    async with Fetcher() as fetcher:
        result = await fetcher.fetch(
            site.url + "/slash", headers=VALIDATORS, validators_of=site.url + "/slash/"
        )
    assert result.status == 200 and result.final_url == site.url + "/slash/"
    assert sent_validators(site) == {"/slash": False, "/slash/": True}
