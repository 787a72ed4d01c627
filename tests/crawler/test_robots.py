"""robots.txt: what each response means, rules for our user agent, and the per-site cache."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler._robots import (
    MAX_CRAWL_DELAY_S,
    MAX_ROBOTS_BYTES,
    NO_RESPONSE,
    RobotsCache,
    RobotsVerdict,
    parse_robots,
)
from eventlog._exceptions import ConfigError

ROBOTS = b"""\
User-agent: *
Disallow: /private/
Crawl-delay: 2

User-agent: crawlog
Disallow: /no-crawlog/
Allow: /no-crawlog/except-this
Crawl-delay: 1.5
"""


def test_a_served_robots_txt_applies_the_group_of_our_user_agent() -> None:
    rules = parse_robots(ROBOTS, 200)
    assert rules.verdict is RobotsVerdict.PARSED
    assert not rules.allowed("http://h/no-crawlog/page")
    assert rules.allowed("http://h/no-crawlog/except-this")
    assert rules.allowed("http://h/private/page")  # that group is for other agents
    assert rules.crawl_delay() == 1.5


def test_another_user_agent_gets_the_catch_all_group() -> None:
    rules = parse_robots(ROBOTS, 200, user_agent="otherbot")
    assert not rules.allowed("http://h/private/page")
    assert rules.allowed("http://h/no-crawlog/page")
    assert rules.crawl_delay() == 2.0


def test_wildcards_and_end_anchors_are_understood() -> None:
    rules = parse_robots(b"User-agent: *\nDisallow: /*.php$\n", 200)
    assert not rules.allowed("http://h/a/index.php")
    assert rules.allowed("http://h/a/index.php?x=1")


def test_percent_encoding_in_rules_and_urls_is_compared_decoded() -> None:
    rules = parse_robots("User-agent: *\nDisallow: /café\n".encode(), 200)
    assert not rules.allowed("http://h/caf%C3%A9/menu")


def test_a_byte_order_mark_does_not_hide_the_first_line() -> None:
    rules = parse_robots(b"\xef\xbb\xbfUser-agent: *\nDisallow: /\n", 200)
    assert not rules.allowed("http://h/x")


def test_without_a_crawl_delay_there_is_none() -> None:
    assert parse_robots(b"User-agent: *\nDisallow: /x\n", 200).crawl_delay() is None


def test_an_absurd_crawl_delay_is_capped() -> None:
    rules = parse_robots(b"User-agent: *\nCrawl-delay: 86400\n", 200)
    assert rules.crawl_delay() == MAX_CRAWL_DELAY_S


def test_an_empty_robots_txt_allows_everything() -> None:
    for body in (b"", None):
        rules = parse_robots(body, 200)
        assert rules.allowed("http://h/anything")
        assert rules.crawl_delay() is None


def test_a_body_that_is_not_a_robots_txt_allows_everything() -> None:
    rules = parse_robots(b"<html><body>Welcome! Disallow nothing\x00\xff</body></html>", 200)
    assert rules.allowed("http://h/anything")


def test_only_the_first_500_kib_are_read() -> None:
    padding = b"# " + b"x" * MAX_ROBOTS_BYTES + b"\n"
    rules = parse_robots(b"User-agent: *\n" + padding + b"Disallow: /\n", 200)
    assert rules.allowed("http://h/x")


@pytest.mark.parametrize("status", [301, 400, 401, 403, 404, 410])
def test_a_missing_robots_txt_allows_everything(status: int) -> None:
    rules = parse_robots(b"User-agent: *\nDisallow: /\n", status)
    assert rules.verdict is RobotsVerdict.UNAVAILABLE
    assert rules.allowed("http://h/x")


@pytest.mark.parametrize("status", [429, 500, 503, 599, NO_RESPONSE])
def test_an_unreachable_robots_txt_allows_nothing_for_now(status: int) -> None:
    rules = parse_robots(None, status)
    assert rules.verdict is RobotsVerdict.UNREACHABLE
    assert not rules.allowed("http://h/")
    assert rules.crawl_delay() is None


@given(st.binary(max_size=500), st.integers(0, 999), st.text(max_size=30))
def test_parsing_never_raises_whatever_the_response(body: bytes, status: int, path: str) -> None:
    rules = parse_robots(body, status)
    assert isinstance(rules.allowed("http://h/" + path), bool)
    delay = rules.crawl_delay()
    assert delay is None or 0.0 <= delay <= MAX_CRAWL_DELAY_S


@given(
    st.lists(
        st.sampled_from(
            [
                "User-agent: *",
                "User-agent: crawlog",
                "Disallow: /a",
                "Allow: /a/b",
                "Disallow:",
                "Crawl-delay: x",
                "Crawl-delay: -3",
                "Crawl-delay: nan",
                "Sitemap: /s",
                "bogus",
            ]
        ),
        max_size=12,
    ),
    st.text(st.sampled_from(list("ab/%?*$")), max_size=10),
)
def test_any_mix_of_directives_gives_a_verdict_and_a_sane_delay(
    lines: list[str], path: str
) -> None:
    rules = parse_robots("\n".join(lines).encode(), 200)
    assert isinstance(rules.allowed("http://h/" + path), bool)
    delay = rules.crawl_delay()
    assert delay is None or 0.0 <= delay <= MAX_CRAWL_DELAY_S


def test_the_cache_returns_rules_until_they_expire() -> None:
    cache = RobotsCache(ttl=100.0)
    rules = parse_robots(ROBOTS, 200)
    cache.put("http://h", rules, now=1_000.0)
    assert cache.get("http://h", now=1_099.0) is rules
    assert cache.get("http://h", now=1_100.0) is None
    assert len(cache) == 0


def test_an_unknown_site_is_not_in_the_cache() -> None:
    assert RobotsCache().get("http://h", now=0.0) is None


def test_unreachable_rules_are_cached_only_briefly() -> None:
    cache = RobotsCache(ttl=1_000.0, unreachable_ttl=10.0)
    cache.put("http://down", parse_robots(None, 503), now=0.0)
    cache.put("http://up", parse_robots(ROBOTS, 200), now=0.0)
    assert cache.get("http://down", now=10.0) is None
    assert cache.get("http://up", now=10.0) is not None


def test_putting_again_replaces_the_rules_and_their_expiry() -> None:
    cache = RobotsCache(ttl=100.0)
    cache.put("http://h", parse_robots(None, 503), now=0.0)
    fresh = parse_robots(ROBOTS, 200)
    cache.put("http://h", fresh, now=50.0)
    assert cache.get("http://h", now=120.0) is fresh
    assert len(cache) == 1


def test_a_full_cache_forgets_the_least_recently_used_site() -> None:
    cache = RobotsCache(max_sites=2)
    rules = parse_robots(ROBOTS, 200)
    cache.put("http://a", rules, now=0.0)
    cache.put("http://b", rules, now=0.0)
    assert cache.get("http://a", now=1.0) is rules  # "a" is now the most recently used
    cache.put("http://c", rules, now=2.0)
    assert cache.get("http://b", now=3.0) is None
    assert cache.get("http://a", now=3.0) is rules
    assert len(cache) == 2


@pytest.mark.parametrize(
    "kwargs", [{"ttl": -1.0}, {"unreachable_ttl": float("nan")}, {"max_sites": 0}]
)
def test_a_bad_cache_setting_is_a_config_error(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        RobotsCache(**kwargs)  # type: ignore[arg-type]
