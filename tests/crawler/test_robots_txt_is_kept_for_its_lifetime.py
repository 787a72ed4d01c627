"""How long a robots.txt is kept: RFC 9309's 24 hours, less if its Cache-Control says so,
never under a floor; an unreachable one briefly."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from crawler._robots import (
    DEFAULT_ROBOTS_TTL_S,
    DEFAULT_UNREACHABLE_TTL_S,
    MIN_ROBOTS_TTL_S,
    RobotsCache,
    parse_robots,
    robots_lifetime,
)

PARSED = parse_robots(b"User-agent: *\nDisallow: /x\n", 200)
MISSING = parse_robots(None, 404)
UNREACHABLE = parse_robots(None, 503)


def test_without_cache_control_a_robots_txt_is_kept_a_day() -> None:
    assert robots_lifetime(PARSED, {}) == DEFAULT_ROBOTS_TTL_S
    assert robots_lifetime(MISSING, {"content-type": "text/plain"}) == DEFAULT_ROBOTS_TTL_S


def test_a_shorter_max_age_shortens_it_and_a_longer_one_does_not_lengthen_it() -> None:
    assert robots_lifetime(PARSED, {"cache-control": "public, max-age=3600"}) == 3600
    assert robots_lifetime(PARSED, {"cache-control": "max-age=999999"}) == DEFAULT_ROBOTS_TTL_S
    assert robots_lifetime(PARSED, {"cache-control": 's-maxage=10, max-age="7200"'}) == 7200


def test_no_cache_and_tiny_ages_are_kept_for_the_floor() -> None:
    assert robots_lifetime(PARSED, {"cache-control": "no-cache"}) == MIN_ROBOTS_TTL_S
    assert robots_lifetime(PARSED, {"cache-control": "private, no-store"}) == MIN_ROBOTS_TTL_S
    assert robots_lifetime(PARSED, {"cache-control": "max-age=0"}) == MIN_ROBOTS_TTL_S


def test_an_unreachable_robots_txt_is_kept_briefly_whatever_it_says() -> None:
    headers = {"cache-control": "max-age=86400"}
    assert robots_lifetime(UNREACHABLE, headers) == DEFAULT_UNREACHABLE_TTL_S


@given(st.text(max_size=60))
def test_any_cache_control_gives_a_lifetime_within_the_bounds(control: str) -> None:
    lifetime = robots_lifetime(PARSED, {"cache-control": control})
    assert MIN_ROBOTS_TTL_S <= lifetime <= DEFAULT_ROBOTS_TTL_S


def test_the_local_cache_keeps_rules_no_longer_than_the_job_does() -> None:
    cache = RobotsCache()
    cache.put("http://a", PARSED, 1000.0, expires=1100.0)
    assert cache.get("http://a", 1099.0) is PARSED
    assert cache.get("http://a", 1100.0) is None
