"""A page the server says is UTF-8 is parsed from its bytes (Lexbor reads them as UTF-8),
not decoded to text first: its title and links are what the text decoded with Python's
``errors="replace"`` gives, invalid bytes, NULs and a ``<meta>`` naming another charset
included."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from crawler._links import Page, _links, _title, parse_page

PAGE_URL = "http://docs.test/guide/page.html"

pieces = st.sampled_from(
    [
        b"<a href='",
        b"'>",
        b"<a href=x\xc3\xa9.html>",
        b"<title>",
        b"</title>",
        b"<base href='/other/'>",
        b'<meta charset="windows-1251">',
        b"\xff",  # never valid in UTF-8
        b"\xc3",  # a sequence cut short
        b"\xc0\xaf",  # an overlong form
        b"\xed\xa0\x80",  # a surrogate
        b"\xf0\x9f\x98",  # four bytes cut short
        b"\xc3\xa9",
        b"\x00",
        b"\r\n",
        b"&amp;",
        b"page-1.html",
        b"#s",
        b"\xef\xbb\xbf",  # a BOM, not at the start
    ]
)


def from_text(body: bytes) -> Page:
    tree = LexborHTMLParser(body.decode("utf-8", errors="replace"))
    return Page(title=_title(tree), links=_links(tree, PAGE_URL))


@settings(max_examples=300, deadline=None)
@given(st.lists(pieces, max_size=24).map(b"".join))
@example(b"<title>caf\xe9 \xff</title><a href='x\xc0\xaf.html'>")
@example(b'<meta charset="windows-1251"><title>\xcf\xf0\xe8</title>')
def test_a_utf8_page_gives_what_its_decoded_text_gives(body: bytes) -> None:
    for charset in ("utf-8", "UTF8", "utf_8"):
        assert parse_page(body, PAGE_URL, charset=charset) == from_text(body)


def test_a_page_in_another_charset_is_still_decoded_with_it() -> None:
    body = '<title>Привет</title><a href="страница.html">x</a>'.encode("windows-1251")
    page = parse_page(body, PAGE_URL, charset="windows-1251")
    assert page.title == "Привет"
    assert page.links == [
        "http://docs.test/guide/%D1%81%D1%82%D1%80%D0%B0%D0%BD%D0%B8%D1%86%D0%B0.html"
    ]
