"""A URL a spider yields is resolved against the page as a browser resolves an href, or
dropped with its reason ("not http(s)", "malformed"; the scope adds "out of scope" and
"too deep"): never an exception."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from yarl import URL

from crawler._scope import Scope
from crawler._spider import Response
from crawler._urls import (
    DROP_REASONS,
    Dropped,
    canonical_url,
    resolve_yielded,
)
from tests.crawler.test_urls import hrefs, http_urls, resolve_link

PAGE = URL("http://shop.test/list/books?page=1")


@pytest.mark.parametrize(
    ("href", "resolved"),
    [
        ("/item/1", "http://shop.test/item/1"),
        ("../item/2", "http://shop.test/item/2"),
        ("?page=2", "http://shop.test/list/books?page=2"),
        ("item/3#reviews", "http://shop.test/list/item/3"),
        ("//cdn.test/x", "http://cdn.test/x"),
        ("  HTTPS://Shop.TEST:443/a/./b  ", "https://shop.test/a/b"),
    ],
)
def test_a_relative_or_absolute_url_resolves_against_the_page(href: str, resolved: str) -> None:
    assert resolve_yielded(href, PAGE) == resolved


@pytest.mark.parametrize(
    ("href", "reason"),
    [
        ("mailto:x@y.test", "not http(s)"),
        ("javascript:void(0)", "not http(s)"),
        ("ftp://files.test/a", "not http(s)"),
        ("tel:+1555", "not http(s)"),
        ("http://[::1", "malformed"),
        ("http://a b.test/", "malformed"),
        ("http://exa%mple.test/", "malformed"),
        ("//[]@", "malformed"),  # yarl raises IndexError on this authority
        ("http://@ ].[@/", "malformed"),
    ],
)
def test_what_is_not_an_http_url_is_dropped_with_its_reason(href: str, reason: str) -> None:
    assert resolve_yielded(href, PAGE) == Dropped(reason)  # type: ignore[arg-type]


def test_the_base_is_asked_for_only_when_the_url_is_relative() -> None:
    asked: list[int] = []

    def base() -> URL:
        asked.append(1)
        return URL("http://shop.test/based/")

    assert resolve_yielded("http://other.test/a", base) == "http://other.test/a"
    assert asked == []
    assert resolve_yielded("item/1", base) == "http://shop.test/based/item/1"
    assert asked == [1]


@given(hrefs | st.text(max_size=30), http_urls())
def test_resolving_never_raises_and_agrees_with_link_extraction(href: str, base: str) -> None:
    result = resolve_yielded(href, URL(base))
    if isinstance(result, Dropped):
        assert result.reason in DROP_REASONS
        assert resolve_link(href, base) is None
    else:
        assert canonical_url(result) == result
        assert result == resolve_link(href, base)


def test_the_scope_says_out_of_scope_before_too_deep() -> None:
    scope = Scope(("http://shop.test/list/",), "prefix", max_depth=1)
    assert scope.refusal("http://shop.test/list/a", 1) is None
    assert scope.refusal("http://shop.test/list/a", 2) == "too deep"
    assert scope.refusal("http://shop.test/item/1", 1) == "out of scope"
    assert scope.refusal("http://shop.test/item/1", 2) == "out of scope"


def _response(body: bytes, content_type: str = "text/html") -> Response:
    async def once(action_id: str, action: Any) -> Any:
        return None

    return Response(
        url="http://shop.test/item/7",
        status=200,
        headers={"content-type": content_type},
        body=body,
        elapsed_ms=1.0,
        task_id="t",
        depth=0,
        page=1,
        resume=None,
        once=once,
    )


def test_an_html_pages_base_href_is_what_its_relative_urls_resolve_against() -> None:
    based = _response(b'<html><head><BASE HREF="/shelf/"></head><a href="x">x</a></html>')
    assert resolve_yielded("item/1", lambda: based.base_url) == "http://shop.test/shelf/item/1"
    plain = _response(b'<html><head></head><a href="x">x</a></html>')
    assert plain.base_url == URL("http://shop.test/item/7")
    not_html = _response(b'<base href="/shelf/">', "text/plain")
    assert not_html.base_url == URL("http://shop.test/item/7")
    not_http = _response(b'<base href="javascript:x">')
    assert not_http.base_url == URL("http://shop.test/item/7")
