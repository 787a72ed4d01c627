"""RFC 9309 on a robots.txt too large or broken: the first 500 KiB of a larger one are its
rules (the line cut there dropped, the rest not even read), and one whose body breaks off
is unreachable — nothing allowed for now — rather than read as allowing everything."""

from __future__ import annotations

import pytest

from crawler._fetch import FetchConfig, Fetcher
from crawler._robots import MAX_ROBOTS_BYTES, RobotsVerdict, parse_robots
from tests.crawler.hostile_site import Route, serve_hostile

pytestmark = pytest.mark.anyio
RULES = b"User-agent: *\nDisallow: /private\n"


async def test_the_first_500_kib_of_a_larger_robots_txt_are_its_rules() -> None:
    padding = b"# " + b"x" * 1000 + b"\n"
    filler = padding * (MAX_ROBOTS_BYTES // len(padding) + 1)
    body = RULES + filler + b"Disallow: /late\n" + filler
    route = Route(body, content_type="text/plain")
    async with serve_hostile({"/robots.txt": route}) as site, Fetcher(FetchConfig()) as fetcher:
        result = await fetcher.fetch_robots(site.url)
    assert result.error is None and result.truncated
    assert len(result.body) == MAX_ROBOTS_BYTES
    rules = parse_robots(result.body, result.status)
    assert rules.verdict is RobotsVerdict.PARSED
    assert not rules.allowed(site.url + "/private/a")
    assert rules.allowed(site.url + "/late")  # past 500 KiB: not read


def test_a_2xx_that_did_not_arrive_whole_is_unreachable_not_allow_all() -> None:
    # A fetch that failed after its 200 (the body over a size cap, a bad encoding).
    for error in ("response larger than 10 bytes", "bad content encoding"):
        rules = parse_robots(b"", 200, error=error)
        assert rules.verdict is RobotsVerdict.UNREACHABLE and rules.reason == error


async def test_a_robots_txt_whose_body_breaks_off_is_unreachable() -> None:
    body = RULES + b"Allow: /\n" * 1000
    route = Route(body, content_type="text/plain", cut_after=len(RULES))
    async with serve_hostile({"/robots.txt": route}) as site, Fetcher(FetchConfig()) as fetcher:
        result = await fetcher.fetch_robots(site.url)
    assert result.error is not None
    rules = parse_robots(result.body, result.status, error=result.error)
    assert rules.verdict is RobotsVerdict.UNREACHABLE
    assert rules.reason == result.error
    assert not rules.allowed(site.url + "/")
