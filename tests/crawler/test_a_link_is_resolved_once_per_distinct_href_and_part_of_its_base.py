"""Links are resolved once per distinct (part of the base, href) pair: `base_part` says what
of its base an href reads, `LinkResolver` keeps what it resolved by that part, and what it
gives is exactly what resolving every href against its page gives."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from yarl import URL

from crawler import BASE_PARTS, LinkResolver, base_key, base_part, clean_href, join_href
from crawler._links import extract_links, parse_page
from crawler.testsite import SiteMap
from tests.crawler.test_urls import _URL_CHARS, hrefs, http_urls

ORIGIN = "http://127.0.0.1:8000"


def uncached(raw_hrefs: list[str], base: URL) -> list[str]:
    """Every href resolved against its own base, no cache: what the resolver must give."""
    resolved = (join_href(clean_href(href).partition("#")[0], base) for href in raw_hrefs)
    return list(dict.fromkeys(url for url in resolved if url is not None))


@pytest.mark.parametrize(
    ("href", "part"),
    [
        ("https://other.example/x", "none"),
        ("HTTP://Host:8/x?y", "none"),
        ("http://[::1]/", "none"),
        ("//cdn.example/x.js", "scheme"),
        ("/docs/x.html", "origin"),
        ("page-7.html", "directory"),
        ("./page-7.html", "directory"),
        ("../api/page-8.html", "directory"),
        (".", "directory"),
        ("a/b:c", "directory"),
        ("x.html?at=1:2", "directory"),
        ("?q=crawl", "document"),
        ("", "document"),
        ("http:///x", "document"),  # yarl takes the host from the base
        ("http://", "document"),
        ("//", "document"),
        ("///x", "document"),
        ("http:x", "document"),
        ("mailto:a@b.c", "none"),
        ("javascript:void(0)", "none"),
        ("Tel:+1", "none"),
        ("HTTPS:x", "document"),
        ("1:2", "document"),
        ("é:x", "document"),
    ],
)
def test_the_part_of_the_base_an_href_reads(href: str, part: str) -> None:
    assert base_part(href) == part


def test_the_keys_of_a_base_s_parts() -> None:
    base = URL("https://u:p@docs.example:8443/en/guide/page.html?v=2")
    keys = {part: base_key(base, part) for part in BASE_PARTS}
    assert keys == {
        "none": "",
        "scheme": "https:",
        "origin": "https://u:p@docs.example:8443",
        "directory": "https://u:p@docs.example:8443/en/guide/",
        "document": "https://u:p@docs.example:8443/en/guide/page.html?v=2",
    }


relative_hrefs = st.one_of(
    hrefs,
    st.text(_URL_CHARS, max_size=12).map(lambda tail: "../" + tail),
    st.text(_URL_CHARS, max_size=12).map(lambda tail: "./" + tail),
    st.text(_URL_CHARS, max_size=12).map(lambda tail: "?" + tail),
    st.text(_URL_CHARS, max_size=12).map(lambda tail: "//" + tail),
    st.sampled_from(["http:///x", "https://", "http:x", "HTTP://a.b/c", "http://@/x"]),
)
file_names = st.text(st.sampled_from(list("ab%2é.;")), max_size=4)
base_queries = st.none() | st.text(st.sampled_from(list("ab=&%2")), max_size=4)


@settings(max_examples=400, deadline=None)
@given(relative_hrefs, http_urls(), file_names, file_names, base_queries, base_queries)
@example("http:///x", "http://a.com/x/y", "a", "b", None, None)
@example("?", "http://a.com/x/y", "a", "b", None, "q")
@example("", "http://a.com/", "a", "a", "1", "2")
def test_two_bases_alike_in_the_part_an_href_reads_resolve_it_alike(
    href: str, page: str, name: str, other_name: str, query: str | None, other_query: str | None
) -> None:
    """The property the cache rests on, over bases that differ only in what the part leaves
    out (the file name, the query, the fragment)."""
    try:
        parsed = URL(page)
        directory = f"{parsed.scheme}://{parsed.raw_authority}"
        directory += parsed.raw_path[: parsed.raw_path.rfind("/") + 1] or "/"
        first = URL(f"{directory}{name}" + ("" if query is None else f"?{query}"))
        second = URL(
            f"{directory}{other_name}" + ("" if other_query is None else f"?{other_query}")
        )
    except ValueError:
        return
    cleaned = clean_href(href).partition("#")[0]
    part = base_part(cleaned)
    if base_key(first, part) == base_key(second, part):
        assert join_href(cleaned, first) == join_href(cleaned, second)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "http://a.example/docs/guide/p1.html",
                    "http://a.example/docs/guide/p2.html?x=1",
                    "http://a.example/docs/api/",
                    "https://a.example/docs/guide/p1.html",
                    "http://b.example/",
                    "http://a.example/%2Fodd/p.html",
                ]
            ),
            st.lists(relative_hrefs, max_size=12),
        ),
        max_size=8,
    ),
    st.integers(1, 20),
)
@example([("http://a.example/docs/guide/p1.html", ["//[]@", "a.html"])], 20)
@example(
    [
        ("http://a.example/docs/guide/p1.html", ["#s1", "a.html", "?q", "#s2", "", "p1.html"]),
        ("http://a.example/docs/guide/p2.html?x=1", ["p2.html?x=1", "#s1", "?q", "a.html"]),
        ("http://a.example/docs/guide/p1.html", ["mailto:a@b.c", "#s1", "#s1"]),
    ],
    20,
)
def test_the_resolver_gives_what_resolving_every_href_gives(
    pages: list[tuple[str, list[str]]], max_entries: int
) -> None:
    """Page after page, sharing bases and directories, with a bound small enough to evict;
    anchors and queries (which read the whole page) beside what the directory's memo keeps."""
    resolver = LinkResolver(max_entries)
    for page, page_hrefs in pages:
        base = URL(page)
        assert resolver.links(page_hrefs, base) == uncached(page_hrefs, base)
        assert len(resolver) <= max_entries


def test_the_pages_of_a_directory_resolve_their_shared_navigation_once() -> None:
    resolver = LinkResolver()
    nav = ["../../", "page-1.html", "./page-2.html#s1", "../api/page-3.html", "/docs/x/"]
    resolver.links(nav, URL(f"{ORIGIN}/docs/guide/page-9.html"))
    kept = len(resolver)
    # The plain relative paths ("page-1.html", "../api/page-3.html") are resolved without
    # a table, kept in the directory's memo only.
    assert kept == 3
    links = resolver.links([*nav, "#s3", ""], URL(f"{ORIGIN}/docs/guide/page-10.html"))
    assert len(resolver) == kept + 1  # only "" (the page itself) is new: "#s3" is "" too
    assert links[:2] == [f"{ORIGIN}/", f"{ORIGIN}/docs/guide/page-1.html"]
    resolver.links(nav, URL(f"{ORIGIN}/docs/api/page-11.html"))
    assert len(resolver) == kept + 1 + 2  # another directory: "../../" and "./page-2.html"


def test_parse_page_with_a_resolver_gives_the_links_it_gives_without_on_the_link_dense_site() -> (
    None
):
    sitemap = SiteMap(200, 4, origin=ORIGIN, layout="link-dense")
    resolver = LinkResolver()
    hrefs = distinct = 0
    for path in sorted(sitemap.pages_ok):
        page = sitemap.render(path)
        assert page is not None
        url = ORIGIN + path
        plain = parse_page(page.body, url, charset="utf-8")
        cached = parse_page(page.body, url, charset="utf-8", resolver=resolver)
        assert cached == plain, path
        assert plain.links == extract_links(page.body, url)
        hrefs += page.body.count(b"<a ")
        distinct += len(plain.links)
    # Most of the site's hrefs were resolved from what the resolver kept.
    assert len(resolver) * 10 < hrefs


def test_a_page_s_base_href_is_what_its_links_resolve_against_through_the_resolver() -> None:
    html = b'<base href="/other/dir/x.html"><a href="y.html">y</a><a href="../z/">z</a>'
    resolver = LinkResolver()
    links = parse_page(html, f"{ORIGIN}/docs/guide/p.html", resolver=resolver).links
    assert links == [f"{ORIGIN}/other/dir/y.html", f"{ORIGIN}/other/z/"]
    again = parse_page(b'<a href="y.html">y</a>', f"{ORIGIN}/docs/guide/p.html", resolver=resolver)
    assert again.links == [f"{ORIGIN}/docs/guide/y.html"]


def test_an_href_yarl_cannot_split_is_no_link_and_the_page_keeps_its_others() -> None:
    base = URL(f"{ORIGIN}/docs/guide/page-9.html")
    assert join_href("//[]@", base) is None
    assert LinkResolver().links(["//[]@", "page-1.html"], base) == [
        f"{ORIGIN}/docs/guide/page-1.html"
    ]
