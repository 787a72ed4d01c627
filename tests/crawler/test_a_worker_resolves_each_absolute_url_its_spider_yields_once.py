"""A worker resolves and fingerprints each absolute URL its spider yields once while it keeps
it (`ResolvedUrls`): what it gives is `resolve_yielded` and `fingerprint_canonical` of the
URL, from whatever page, whatever was kept or let go before."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from yarl import URL

from crawler._urls import (
    MALFORMED,
    NOT_HTTP,
    Dropped,
    ResolvedUrls,
    fingerprint_canonical,
    resolve_yielded,
)
from tests.crawler.test_a_link_is_resolved_once_per_distinct_href_and_part_of_its_base import (
    relative_hrefs,
)
from tests.crawler.test_urls import http_urls


def expected(url: str, base: URL) -> tuple[str, str] | Dropped:
    resolved = resolve_yielded(url, base)
    return (
        resolved if isinstance(resolved, Dropped) else (resolved, fingerprint_canonical(resolved))
    )


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(relative_hrefs, http_urls()), max_size=20),
    st.integers(1, 8),
)
def test_what_it_gives_is_what_resolving_each_url_against_its_page_gives(
    yields: list[tuple[str, str]], max_entries: int
) -> None:
    kept = ResolvedUrls(max_entries)
    for url, page in yields:
        try:
            base = URL(page)
        except ValueError:
            continue
        assert kept.resolve(url, base) == expected(url, base)
        # The same URL from another page: relative ones resolve against that page.
        other = URL("https://elsewhere.example/a/b/c.html?x=1")
        assert kept.resolve(url, other) == expected(url, other)
        assert len(kept) <= max_entries


def test_only_absolute_urls_are_kept_and_the_base_is_read_only_for_relative_ones() -> None:
    kept = ResolvedUrls()
    calls: list[str] = []

    def base() -> URL:
        calls.append("base")
        return URL("http://h.example/docs/page.html")

    absolute = "HTTP://H.example:80/x?b=2&a=1#frag"
    assert kept.resolve(absolute, base) == (
        "http://h.example/x?a=1&b=2",
        fingerprint_canonical("http://h.example/x?a=1&b=2"),
    )
    assert kept.resolve(absolute, base) == kept.resolve(absolute, base)
    assert calls == [] and len(kept) == 1
    assert kept.resolve("other.html", base) == (
        "http://h.example/docs/other.html",
        fingerprint_canonical("http://h.example/docs/other.html"),
    )
    assert calls == ["base"] and len(kept) == 1  # a relative URL depends on its page
    assert kept.resolve("http:///x", base)[0] == "http://h.example/x"  # type: ignore[index]
    assert len(kept) == 1  # yarl takes that host from the base: not kept either
    assert kept.resolve("ftp://h.example/x", base) is NOT_HTTP
    assert kept.resolve("mailto:a@b.c", base) is NOT_HTTP
    assert kept.resolve("http://exa mple.com/", base) is MALFORMED
    assert len(kept) == 4  # ftp://, mailto: (no base makes it http) and the malformed one
