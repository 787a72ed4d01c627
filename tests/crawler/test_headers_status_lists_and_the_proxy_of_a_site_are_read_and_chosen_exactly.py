"""The pure parts of a crawl's identity: ``Name: value`` headers, ``429,500-504`` status
lists and the proxy a site goes through — read, checked and chosen the same everywhere."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler._identity import (
    check_proxy,
    format_statuses,
    merged_headers,
    parse_header,
    parse_statuses,
    proxy_for_site,
)
from eventlog import ConfigError


def test_a_header_is_split_at_its_first_colon_and_stripped() -> None:
    assert parse_header("Accept-Language:  en-GB, en;q=0.8 ") == (
        "Accept-Language",
        "en-GB, en;q=0.8",
    )
    assert parse_header("X-Time: 12:30") == ("X-Time", "12:30")
    assert parse_header("X-Empty:") == ("X-Empty", "")


TOKENS = st.text(
    alphabet="!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    min_size=1,
    max_size=20,
).filter(
    lambda name: (
        name.lower()
        not in {"user-agent", "host", "connection", "content-length", "transfer-encoding"}
    )
)
VALUES = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)


@given(TOKENS, VALUES)
def test_any_token_and_printable_value_read_back_as_written(name: str, value: str) -> None:
    assert parse_header(f"{name}:{value}") == (name, value.strip())
    assert parse_header(f"  {name} : {value}") == (name, value.strip())


@pytest.mark.parametrize(
    "text",
    ["no colon", ": value", "Two Words: x", "X-Nl: a\nb", "X-Uni: é", "user-agent: x", "Host: h"],
)
def test_a_header_that_cannot_be_a_default_is_refused(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_header(text)


def test_a_later_layer_replaces_a_header_of_the_same_name_in_any_case() -> None:
    spider = {"Accept-Language": "fr", "X-Spider": "1"}
    flags = [("accept-language", "en"), ("X-Flag", "2")]
    assert merged_headers(spider, flags) == (
        ("accept-language", "en"),
        ("X-Spider", "1"),
        ("X-Flag", "2"),
    )


def test_status_lists_take_codes_ranges_and_none() -> None:
    assert parse_statuses("429,500-504") == {429, 500, 501, 502, 503, 504}
    assert parse_statuses(" 404 , 410 ") == {404, 410}
    assert parse_statuses("none") == frozenset()
    assert parse_statuses("") == frozenset()


@pytest.mark.parametrize("text", ["5xx", "600", "99", "504-500", "429,", "1-2-3", "429;500"])
def test_a_status_list_that_is_not_one_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="not an HTTP status"):
        parse_statuses(text)


@given(st.frozensets(st.integers(100, 599)))
def test_a_status_set_written_as_ranges_reads_back_the_same(codes: frozenset[int]) -> None:
    text = format_statuses(codes)
    assert parse_statuses(text) == codes
    assert len(text) <= len(",".join(map(str, sorted(codes)))) or text == "none"


@pytest.mark.parametrize("url", ["http://127.0.0.1:3128", "https://user:pw@proxy.test:8443/"])
def test_an_http_or_https_proxy_url_is_taken(url: str) -> None:
    assert check_proxy(url) == url


@pytest.mark.parametrize(
    "url", ["socks5://127.0.0.1:1080", "127.0.0.1:3128", "http://", "http://h:x/", "http://h/p"]
)
def test_a_proxy_that_is_not_an_http_url_with_a_host_is_refused(url: str) -> None:
    with pytest.raises(ConfigError):
        check_proxy(url)


PROXIES = st.lists(
    st.integers(1, 65535).map(lambda port: f"http://127.0.0.1:{port}"),
    min_size=1,
    max_size=8,
    unique=True,
).map(tuple)
SITES = st.from_regex(r"https?://[a-z0-9.-]{1,30}(:[0-9]{2,5})?", fullmatch=True)


@given(PROXIES, SITES)
def test_a_site_s_proxy_is_one_of_the_list_and_the_same_every_time(
    proxies: tuple[str, ...], site: str
) -> None:
    chosen = proxy_for_site(proxies, site)
    assert chosen in proxies
    assert proxy_for_site(proxies, site) == chosen


def test_another_process_chooses_the_same_proxy_for_each_site() -> None:
    # hash() is salted per process; a resumed task on another worker must not move.
    proxies = tuple(f"http://127.0.0.1:{port}" for port in range(8001, 8006))
    sites = [f"http://site{n}.test" for n in range(40)]
    here = [proxy_for_site(proxies, site) for site in sites]
    code = (
        "import sys; from crawler._identity import proxy_for_site as p; "
        f"print('\\n'.join(p({proxies!r}, s) for s in {sites!r}))"
    )
    there = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert here == there
    assert len(set(here)) > 1, "every site on one proxy: the list is not spread"
