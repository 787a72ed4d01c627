"""``Response.encoding`` and ``Response.text`` agree with Scrapy's ``HtmlResponse`` on every
page that declares its encoding (a BOM, the header's charset, the body's ``<meta>``) or is
ASCII or UTF-8, whatever else the bytes hold (hypothesis). A page that declares nothing
and is not UTF-8 is read as cp1252 (Scrapy 2.19 guesses with charset-normalizer there,
which crawlog does not load)."""

from __future__ import annotations

import codecs
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from w3lib.encoding import html_to_unicode

from crawler import Response

scrapy_http = pytest.importorskip("scrapy.http")

WORDS = "Café déjà vu \u2013 東京"
BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
CHARSETS = ("utf-8", "iso-8859-1", "cp1252", "shift_jis", "utf-16", "koi8-r", "bogus-9")


def scrapy_reads(body: bytes, content_type: str | None) -> tuple[str, str]:
    headers = {"Content-Type": content_type} if content_type is not None else {}
    page = scrapy_http.HtmlResponse("http://shop.test/", body=body, headers=headers)
    return page.encoding, page.text


def crawlog_reads(body: bytes, content_type: str) -> Response:
    async def once(action_id: str, action: Any) -> Any:
        return None

    return Response(
        url="http://shop.test/", status=200, headers={"content-type": content_type}, body=body,
        elapsed_ms=1.0, task_id="t", depth=0, page=1, resume=None, once=once,
    )  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    written_in=st.sampled_from(CHARSETS[:-1]),
    header=st.none() | st.sampled_from(CHARSETS),
    meta=st.none() | st.sampled_from(CHARSETS),
    bom=st.booleans(),
    noise=st.binary(max_size=8),
)
def test_the_encoding_and_text_are_scrapy_s(
    written_in: str,
    header: str | None,
    meta: str | None,
    bom: bool,
    noise: bytes,
) -> None:
    declared = f'<meta charset="{meta}">' if meta else ""
    html = f"<html><head>{declared}<title>t</title></head><body><h1>{WORDS}</h1>"
    body = html.encode(written_in, errors="replace") + noise
    if bom and written_in == "utf-8":
        body = b"\xef\xbb\xbf" + body
    content_type = "text/html" if header is None else f"text/html; charset={header}"
    response = crawlog_reads(body, content_type)
    declared = body.startswith(BOMS) or known(header) or known(meta)
    if not declared and not decodes(body, "utf-8"):
        # cp1252 if it decodes the body, else the default, ASCII, which w3lib reads as cp1252.
        assert response.encoding in ("cp1252", "ascii")
        assert response.text == html_to_unicode("charset=cp1252", body)[1]
        return
    assert (response.encoding, response.text) == scrapy_reads(body, content_type)


def known(charset: str | None) -> bool:
    return charset is not None and charset != "bogus-9"


def decodes(body: bytes, encoding: str) -> bool:
    try:
        body.decode(encoding)
    except UnicodeError:
        return False
    return True


def test_a_latin_1_page_declared_by_its_meta_reads_as_written(
    make_response: Callable[..., Response],
) -> None:
    body = f'<meta charset="iso-8859-1"><h1>{WORDS[:9]}</h1>'.encode("latin-1")
    response = make_response(body, "text/html")
    assert response.css("h1::text").get() == "Café déjà"
    assert response.encoding == "cp1252"  # as w3lib (and browsers) read Latin-1
