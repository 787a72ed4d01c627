"""URL handling: the canonical form that dedup keys on, link resolution, fingerprints, seeds."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from yarl import URL

from crawler._urls import (
    canonical_url,
    check_seed_url,
    clean_href,
    fingerprint,
    join_href,
    site_of,
)
from eventlog._exceptions import ConfigError


def resolve_link(href: str, base: str) -> str | None:
    """The canonical absolute URL an ``href`` points to from the page ``base``, as the link
    extractor resolves it; None for other schemes and hrefs that do not parse."""
    try:
        base_url = URL(base)
    except ValueError:
        return None
    return join_href(clean_href(href), base_url)


# Characters that stress percent-encoding: reserved, unreserved, escapes, non-ASCII, space.
_URL_CHARS = st.sampled_from(list("aZ09-._~%2fF7e/?#[]@!$&'()*+,;= :éü€\u00a0"))

schemes = st.sampled_from(["http", "https", "HTTP", "HtTpS"])
hosts = st.sampled_from(
    ["example.com", "EXAMPLE.com", "docs.example.org", "bücher.de", "127.0.0.1", "[::1]", "h"]
)
ports = st.none() | st.sampled_from([80, 443, 8080, 1])
segments = st.text(_URL_CHARS, max_size=6) | st.sampled_from([".", "..", "%2e", "%2E%2e"])
paths = st.lists(segments, max_size=4).map(lambda parts: "".join("/" + part for part in parts))
query_parts = st.text(st.sampled_from(list("ab=%2&+ é;")), max_size=5)
queries = st.none() | st.lists(query_parts, max_size=4).map("&".join)
fragments = st.none() | st.text(_URL_CHARS, max_size=5)


@st.composite
def http_urls(draw: st.DrawFn) -> str:
    """Absolute http(s) URLs in many spellings, most of them not canonical."""
    url = f"{draw(schemes)}://{draw(hosts)}"
    port = draw(ports)
    if port is not None:
        url += f":{port}"
    url += draw(paths)
    query = draw(queries)
    if query is not None:
        url += "?" + query
    fragment = draw(fragments)
    if fragment is not None:
        url += "#" + fragment
    return url


hrefs = st.one_of(
    http_urls(),
    st.text(_URL_CHARS, max_size=20),
    st.sampled_from(["mailto:a@b.c", "javascript:void(0)", "data:,x", "tel:+1", "ftp://h/x"]),
    st.text(max_size=20),
)


def test_scheme_and_host_are_lowercased_and_the_default_port_dropped() -> None:
    assert canonical_url("HTTP://Example.COM:80/Path") == "http://example.com/Path"
    assert canonical_url("https://example.com:443/") == "https://example.com/"


def test_a_port_that_is_not_the_default_is_kept() -> None:
    assert canonical_url("http://example.com:443/") == "http://example.com:443/"
    assert canonical_url("https://example.com:8443") == "https://example.com:8443/"


def test_the_fragment_is_dropped_and_the_query_kept() -> None:
    assert canonical_url("http://h/p?x=1#section") == "http://h/p?x=1"


def test_query_parameters_are_sorted_by_key_keeping_repeated_keys_in_order() -> None:
    assert canonical_url("http://h/?b=2&a=1&b=1") == "http://h/?a=1&b=2&b=1"


def test_empty_query_parameters_and_an_empty_query_vanish() -> None:
    assert canonical_url("http://h/p?") == "http://h/p"
    assert canonical_url("http://h/p?&a=1&&") == "http://h/p?a=1"


def test_percent_encoding_is_normalised() -> None:
    assert canonical_url("http://h/%7euser/%41") == "http://h/~user/A"
    assert canonical_url("http://h/a%2fb") == "http://h/a%2Fb"
    assert canonical_url("http://h/caf\u00e9 x") == "http://h/caf%C3%A9%20x"


def test_an_empty_path_becomes_slash() -> None:
    assert canonical_url("http://example.com") == "http://example.com/"
    assert canonical_url("http://example.com?q=1") == "http://example.com/?q=1"


def test_dot_segments_are_resolved() -> None:
    assert canonical_url("http://h/a/./b/../c") == "http://h/a/c"
    assert canonical_url("http://h/a/%2e%2e/b") == "http://h/b"


def test_international_hosts_are_in_punycode() -> None:
    assert canonical_url("http://Bücher.de/") == "http://xn--bcher-kva.de/"


def test_an_ipv6_host_keeps_its_brackets() -> None:
    assert canonical_url("http://[::1]:80/x") == "http://[::1]/x"
    assert site_of("http://[::1]:8080/x") == "http://[::1]:8080"


@pytest.mark.parametrize(
    "url", ["ftp://h/x", "mailto:a@b.c", "/relative/path", "http://", "http://a b.com/"]
)
def test_canonical_url_refuses_what_is_not_an_http_url(url: str) -> None:
    with pytest.raises(ValueError):
        canonical_url(url)


@given(http_urls())
@example("http://h/%25zz")
def test_canonicalisation_is_idempotent(url: str) -> None:
    canonical = canonical_url(url)
    assert canonical_url(canonical) == canonical


@given(st.text(max_size=40))
def test_canonicalisation_of_any_text_is_idempotent_or_refused(text: str) -> None:
    try:
        canonical = canonical_url(text)
    except ValueError:
        return
    assert canonical_url(canonical) == canonical


@given(http_urls())
def test_a_canonical_url_has_no_fragment_and_a_lowercase_http_scheme(url: str) -> None:
    canonical = canonical_url(url)
    assert "#" not in canonical
    assert canonical.startswith(("http://", "https://"))


def test_a_relative_href_resolves_against_the_page() -> None:
    page = "http://h/docs/guide/index.html"
    assert resolve_link("../api/x.html#f", page) == "http://h/docs/api/x.html"
    assert resolve_link("page2.html", page) == "http://h/docs/guide/page2.html"
    assert resolve_link("/root", page) == "http://h/root"
    assert resolve_link("?q=1", page) == "http://h/docs/guide/index.html?q=1"
    assert resolve_link("//other.org/p", "https://h/") == "https://other.org/p"


def test_a_fragment_only_href_is_the_page_itself() -> None:
    assert resolve_link("#top", "http://h/p?x=1#old") == "http://h/p?x=1"


def test_whitespace_around_an_href_and_newlines_inside_it_are_removed() -> None:
    assert resolve_link("  \n/a/\nb\t ", "http://h/") == "http://h/a/b"


@pytest.mark.parametrize(
    "href",
    ["mailto:a@b.c", "javascript:void(0)", "file:///etc/passwd", "data:text/html,x", "tel:+1"],
)
def test_hrefs_with_other_schemes_resolve_to_nothing(href: str) -> None:
    assert resolve_link(href, "http://h/") is None


@pytest.mark.parametrize("href", ["http://[", "http://h:99999/", "http://a b/", "http://h:x/"])
def test_hrefs_that_do_not_parse_resolve_to_nothing(href: str) -> None:
    assert resolve_link(href, "http://h/") is None


@given(hrefs, http_urls())
def test_resolving_never_raises_and_gives_a_canonical_url_or_none(href: str, base: str) -> None:
    resolved = resolve_link(href, base)
    assert resolved is None or canonical_url(resolved) == resolved


@given(http_urls(), http_urls())
def test_resolving_an_absolute_canonical_url_gives_itself(url: str, base: str) -> None:
    canonical = canonical_url(url)
    assert resolve_link(canonical, base) == canonical


def test_a_fingerprint_is_sixteen_hex_characters() -> None:
    value = fingerprint("http://h/")
    assert len(value) == 16
    assert int(value, 16) >= 0


@given(http_urls(), http_urls())
def test_fingerprints_are_equal_exactly_when_canonical_forms_are(a: str, b: str) -> None:
    assert (fingerprint(a) == fingerprint(b)) == (canonical_url(a) == canonical_url(b))


def test_a_fingerprint_is_stable_across_runs() -> None:
    # A task id must not change between versions: this value is in stored logs.
    assert fingerprint("https://example.com/") == fingerprint("HTTPS://EXAMPLE.COM:443/#x")
    assert fingerprint("https://example.com/") == "14ba2eb79c27555b"


def test_the_site_is_scheme_host_and_a_port_only_when_not_the_default() -> None:
    assert site_of("HTTPS://Docs.Example.org:443/a?b#c") == "https://docs.example.org"
    assert site_of("http://h:8080/a") == "http://h:8080"


@given(http_urls())
def test_the_site_of_a_url_is_a_prefix_of_its_canonical_form(url: str) -> None:
    assert canonical_url(url).startswith(site_of(url) + "/")


def test_a_valid_seed_comes_back_canonical() -> None:
    assert check_seed_url("HTTPS://Example.com:443/docs#x") == "https://example.com/docs"


@pytest.mark.parametrize(
    ("seed", "says"),
    [
        ("ftp://x", "seed 'ftp://x' is not an http(s) URL"),
        ("example.com/docs", "has no scheme"),
        ("http://", "has no host"),
        ("http://exa mple.com/", "contains whitespace"),
        (" http://example.com/", "contains whitespace"),
        ("http://example.com:99999/", "cannot be parsed"),
        ("http://[::1/", "cannot be parsed"),
        ("http://[]@/x", "cannot be parsed"),
        ("http://ex%41mple.com/", "host"),
        ("", "empty"),
    ],
)
def test_an_invalid_seed_is_a_config_error_saying_what_is_wrong(seed: str, says: str) -> None:
    with pytest.raises(ConfigError, match="expected an absolute http") as raised:
        check_seed_url(seed)
    assert says in str(raised.value)


def test_escapes_in_the_page_directory_survive_resolution() -> None:
    # yarl's own join decodes them (aio-libs/yarl#1774): "%2F" would become a new segment.
    assert resolve_link("x", "http://h/a%2Fb/c") == "http://h/a%2Fb/x"
    assert resolve_link("../x", "http://h/a%20b/c/d") == "http://h/a%20b/x"


def test_only_controls_and_spaces_are_trimmed_from_an_href() -> None:
    assert resolve_link("\x00 /a\u00a0", "http://h/") == "http://h/a%C2%A0"
