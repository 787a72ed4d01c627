"""Links and title of an HTML page: resolution, <base href>, dedup, encodings, garbage."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler._links import extract_links, parse_page
from crawler._urls import canonical_url
from tests.crawler.test_urls import http_urls
from tools.bench_links import synthetic_page

PAGE = "http://h/docs/guide/index.html"


def extract_title(html: bytes, *, charset: str | None = None) -> str | None:
    """The page's ``<title>``, as the worker gets it."""
    return parse_page(html, PAGE, charset=charset).title


def test_links_are_resolved_against_the_page_and_canonical() -> None:
    html = b"""<a href="../api/x.html#f">x</a> <a href="HTTP://Other.ORG:80/p?b=1&amp;a=2">o</a>
    <a href="/root">r</a>"""
    assert extract_links(html, PAGE) == [
        "http://h/docs/api/x.html",
        "http://other.org/p?a=2&b=1",
        "http://h/root",
    ]


def test_links_are_deduplicated_in_order_of_first_occurrence() -> None:
    html = b'<a href="b">1</a><a href="a">2</a><a href="b#x">3</a><a href="./a">4</a>'
    assert extract_links(html, PAGE) == ["http://h/docs/guide/b", "http://h/docs/guide/a"]


def test_anchors_within_the_page_are_the_page_itself() -> None:
    html = b'<a href="#one">1</a><a href="#two">2</a><a href="">3</a><a href>4</a>'
    assert extract_links(html, PAGE) == [PAGE]


def test_links_with_other_schemes_and_hrefs_that_do_not_parse_are_left_out() -> None:
    html = b"""<a href="mailto:a@h">m</a><a href="javascript:void(0)">j</a><a href="tel:1">t</a>
    <a href="data:text/html,x">d</a><a href="file:///etc">f</a><a href="http://[">b</a>
    <a href="ok">ok</a><a name="no-href">n</a>"""
    assert extract_links(html, PAGE) == ["http://h/docs/guide/ok"]


def test_whitespace_around_hrefs_is_ignored() -> None:
    assert extract_links(b'<a href="  \n next.html\t">n</a>', PAGE) == [
        "http://h/docs/guide/next.html"
    ]


def test_the_first_base_href_is_honoured_resolved_against_the_page() -> None:
    html = b"""<head><base href="../v2/"><base href="http://ignored/"></head>
    <a href="x.html">x</a>"""
    assert extract_links(html, PAGE) == ["http://h/docs/v2/x.html"]


@pytest.mark.parametrize(
    ("html", "charset"),
    [
        (b'<p>text</p><BaSe HREF="../v2/"><a href="x.html">x</a>', None),  # in the body
        ('<title>é</title><bAsE href="../v2/"><a href="x.html">x</a>'.encode("utf-16"), None),
        ('<base href="../v2/"><a href="x.html">é</a>'.encode("latin-1"), "latin-1"),
    ],
)
def test_a_base_href_in_any_case_anywhere_in_any_encoding_is_honoured(
    html: bytes, charset: str | None
) -> None:
    assert parse_page(html, PAGE, charset=charset).links == ["http://h/docs/v2/x.html"]


def test_a_base_href_that_is_not_http_falls_back_to_the_page() -> None:
    html = b'<base href="javascript:alert(1)"><a href="x.html">x</a>'
    assert extract_links(html, PAGE) == ["http://h/docs/guide/x.html"]


def test_an_invalid_page_url_yields_no_links() -> None:
    assert extract_links(b'<a href="http://h/">x</a>', "http://[") == []


def test_the_title_has_its_whitespace_collapsed() -> None:
    assert extract_title(b"<title>\n  Guide \t to\n crawling </title>") == "Guide to crawling"


def test_a_missing_or_blank_title_is_none() -> None:
    assert extract_title(b"<p>no title</p>") is None
    assert extract_title(b"<title>  \n </title>") is None


def test_title_and_links_come_from_one_parse() -> None:
    page = parse_page(b'<title>T</title><a href="x">x</a>', PAGE)
    assert page.title == "T"
    assert page.links == ["http://h/docs/guide/x"]


def test_the_meta_charset_decides_the_decoding() -> None:
    html = '<meta charset="koi8-r"><title>Привет</title><a href="Привет">x</a>'.encode("koi8-r")
    page = parse_page(html, "http://h/")
    assert page.title == "Привет"
    assert page.links == ["http://h/%D0%9F%D1%80%D0%B8%D0%B2%D0%B5%D1%82"]


def test_an_http_equiv_content_type_declares_the_charset_too() -> None:
    html = '<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">'
    html += "<title>Привет</title>"
    assert extract_title(html.encode("windows-1251")) == "Привет"


def test_the_charset_of_the_http_header_outranks_the_meta() -> None:
    html = '<meta charset="utf-8"><title>café</title>'.encode("latin-1")
    assert extract_title(html, charset="latin-1") == "café"


def test_an_unknown_header_charset_falls_back_to_sniffing() -> None:
    assert extract_title("<title>café</title>".encode(), charset="no-such-charset") == "café"


def test_a_byte_order_mark_outranks_the_header_charset() -> None:
    html = "<title>café</title>".encode("utf-16")
    assert extract_title(html, charset="latin-1") == "café"


def test_without_a_declaration_bytes_are_utf8_and_invalid_ones_replaced() -> None:
    assert extract_title(b"<title>caf\xc3\xa9 \xff\xfe</title>") == "caf\u00e9 \ufffd\ufffd"


def test_a_link_dense_page_yields_every_distinct_link() -> None:
    links = extract_links(
        synthetic_page(300), "https://docs.example.org/en/stable/guide/index.html"
    )
    assert len(links) == len(set(links)) > 100
    assert all(canonical_url(link) == link for link in links)


@given(st.binary(max_size=2000), st.sampled_from([None, "utf-8", "latin-1", "shift_jis", "x"]))
def test_garbage_bytes_never_raise(html: bytes, charset: str | None) -> None:
    page = parse_page(html, PAGE, charset=charset)
    assert all(canonical_url(link) == link for link in page.links)


@given(st.lists(st.tuples(http_urls(), st.text(max_size=10)), max_size=8))
def test_every_absolute_link_comes_back_canonical_once(anchors: list[tuple[str, str]]) -> None:
    html = "".join(f'<a href="{_attribute(url)}">{_attribute(text)}</a>' for url, text in anchors)
    html += "".join(f'<a href="{_attribute(url)}">again</a>' for url, _ in anchors)
    # Spaces around an href do not count.
    expected = dict.fromkeys(canonical_url(url.strip(" ")) for url, _ in anchors)
    assert extract_links(html.encode(), PAGE) == list(expected)


def _attribute(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
