"""A plain relative path (`is_plain_path`: unreserved characters and ``/``, no dot or empty
segment), after any number of ``../`` or after one ``/`` (`plain_path_ups`), resolves to
its base's directory that many levels up, or its root (`directory_prefix`), followed by
the path: the shortcut `LinkResolver`
takes for a page's links to the pages of its own and other directories must give exactly
what `join_href` gives, whatever the base's spelling."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from yarl import URL

from crawler import LinkResolver, join_href
from crawler._urls import directory_prefix, is_plain_path, plain_path_ups
from tests.crawler.test_urls import _URL_CHARS, http_urls

plain_segments = st.text(st.sampled_from(list("aZ09-._")), min_size=1, max_size=5)
plain_paths = st.lists(plain_segments, min_size=1, max_size=3).map("/".join) | st.lists(
    plain_segments, min_size=1, max_size=3
).map(lambda parts: "/".join(parts) + "/")
near_plain = st.text(st.sampled_from(list("a./-_~%é?:")), min_size=1, max_size=6)
ups = st.integers(min_value=0, max_value=4).map(lambda n: "../" * n) | st.just("/")


@pytest.mark.parametrize(
    ("href", "plain"),
    [
        ("page-7.html", True),
        ("api/v2/", True),
        ("a.b-c_d/e", True),
        ("...", True),
        (".hidden", True),
        ("", False),
        (".", False),
        ("..", False),
        ("./page.html", False),
        ("../page.html", False),
        ("a/./b", False),
        ("a/../b", False),
        ("a/..", False),
        ("a//b", False),
        ("/root.html", False),
        ("~user", False),
        ("a%2Fb", False),
        ("page.html?x=1", False),
        ("mailto:a@b.c", False),
        ("é.html", False),
    ],
)
def test_which_hrefs_are_plain_paths(href: str, plain: bool) -> None:
    assert is_plain_path(href) is plain


@pytest.mark.parametrize(
    ("href", "form"),
    [
        ("page-7.html", (0, "page-7.html")),
        ("../api/page-8.html", (1, "api/page-8.html")),
        ("../../a/", (2, "a/")),
        ("../", None),
        ("../..", None),
        ("../../", None),
        ("./x", None),
        ("../x/../y", None),
        ("..//x", None),
        ("/x", (-1, "x")),
        ("/", (-1, "")),
        ("/docs/api/", (-1, "docs/api/")),
        ("//cdn.example/x", None),
        ("/../x", None),
        ("/a//b", None),
    ],
)
def test_which_hrefs_are_plain_paths_after_their_ups(
    href: str, form: tuple[int, str] | None
) -> None:
    assert plain_path_ups(href) == form


@settings(max_examples=500, deadline=None)
@given(http_urls(), ups, plain_paths | near_plain)
@example("http://a.com/%2Fodd/p.html", "", "x.html")
@example("http://a.com/%2Fodd/q/p.html", "../", "x.html")
@example("HTTP://A.com:80/d%7e/p", "", "q/r")
@example("http://a.com/a/b/..", "", "c")
@example("http://a.com/a/b/c", "../../../", "d")
@example("http://a.com", "../", "c/")
@example("http://u:p@A.com:443/x/y?q", "/", "c/d")
@example("https://a.com:443/%2Fodd/p.html", "/", "")
def test_a_plain_path_appended_to_the_directory_is_what_join_href_gives(
    page: str, up: str, path: str
) -> None:
    try:
        base = URL(page)
    except ValueError:
        return
    href = up + path
    form = plain_path_ups(href)
    if form is None:
        return
    n, path = form
    prefix = directory_prefix(base, n)
    expected = join_href(href, base)
    if prefix is None:
        assert expected is None or not expected.startswith(("http://", "https://"))
        return
    assert prefix + path == expected


@settings(max_examples=200, deadline=None)
@given(
    http_urls(),
    st.lists(
        st.tuples(ups, plain_paths).map("".join) | st.text(_URL_CHARS, max_size=8), max_size=10
    ),
)
def test_the_resolver_gives_join_href_of_every_link_with_plain_paths_among_them(
    page: str, raw_hrefs: list[str]
) -> None:
    try:
        base = URL(page)
    except ValueError:
        return
    resolver = LinkResolver()
    expected: dict[str, None] = {}
    for raw in raw_hrefs:
        href = raw.strip("".join(chr(c) for c in range(0x21))).replace("\t", "")
        url = join_href(href.replace("\n", "").replace("\r", "").partition("#")[0], base)
        if url is not None:
            expected[url] = None
    assert resolver.links(raw_hrefs, base) == list(expected)
    assert resolver.links(raw_hrefs, base) == list(expected), "the second time, from the cache"
