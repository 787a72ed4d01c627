"""The fetcher sends a request through aiohttp alone, its URL parsed by yarl without httpx
when it looks plain (`crawler._fetch._target`). Sent that way, every URL goes to the same
host, port and path-and-query as when httpx read it first and aiohttp the text httpx made
of it, and a URL either way refuses is refused."""

from __future__ import annotations

import httpx
import yarl
from hypothesis import example, given
from hypothesis import strategies as st

from crawler._fetch import _target

ORIGINS = (
    "http://a.example",
    "https://b.example:8443",
    "http://127.0.0.1:80",
    "http://X.Example:0",
    "http://a..b",
    "https://[::1]:8080",
    "http://bücher.example",
    "http://h:99999",
)
TAIL = "abcAZ09-._~:/?#[]@!$&'()*+,;=% \"<>\\^`{|}\x01é"


def as_before(url: str) -> tuple[str, str | None, int | None, str] | None:
    """Where a request for ``url`` went when httpx built it: None if refused."""
    try:
        read = httpx.URL(url)
        if read.scheme not in ("http", "https") or not read.host:
            return None
        sent = yarl.URL(str(read))
    except (httpx.InvalidURL, ValueError):
        return None
    return sent.scheme, sent.raw_host, sent.port, sent.raw_path_qs


@given(
    st.sampled_from(ORIGINS),
    st.sampled_from(("/", "?", "#", "")),
    st.text(alphabet=TAIL, max_size=24),
)
@example("http://a.example", "/", "x/./y")
@example("http://x", "/", "=/.")
@example("http://a.example", "/", "%zz")
@example("http://a.example", "", "/../y?q=1#f")
def test_a_url_goes_where_it_went_through_httpx(origin: str, join: str, tail: str) -> None:
    url = origin + join + tail
    target = _target(url)
    now = None if target is None else (target.scheme, target.raw_host, target.port)
    before = as_before(url)
    assert now == (None if before is None else before[:3])
    if target is not None and before is not None:
        assert target.raw_path_qs == before[3]
