"""``response.css()`` and ``response.xpath()`` are parsel's (Scrapy's selectors): ``::text``,
``::attr(name)``, ``.get()``, ``.getall()``, ``.re()``, on HTML and on XML responses, the
selector built once, on first use."""

from __future__ import annotations

from collections.abc import Callable

from crawler import Response

PAGE = b"""<html><head><title>Shop</title></head><body>
<h1 class="t">Lamps <b>and</b> shades</h1>
<ul><li><a href="/item/1" class="p">Lamp, 12 EUR</a></li>
<li><a href="../item/2" class="p">Shade, 7 EUR</a></li></ul></body></html>"""


def test_css_takes_scrapy_s_text_and_attribute_pseudo_elements(
    make_response: Callable[..., Response],
) -> None:
    response = make_response(PAGE)
    assert response.css("title::text").get() == "Shop"
    assert response.css("a.p::attr(href)").getall() == ["/item/1", "../item/2"]
    assert response.css("h1 ::text").getall() == ["Lamps ", "and", " shades"]
    assert response.css("a.p::text").re(r"(\d+) EUR") == ["12", "7"]
    assert response.css("p.none::text").get() is None
    assert response.css("p.none::text").get(default="-") == "-"
    # Selectors select further, as in Scrapy.
    rows = response.css("li")
    assert [row.css("a::attr(href)").get() for row in rows] == ["/item/1", "../item/2"]


def test_xpath_selects_with_variables(make_response: Callable[..., Response]) -> None:
    response = make_response(PAGE)
    assert response.xpath("//a/@href").getall() == ["/item/1", "../item/2"]
    assert response.xpath("//a[contains(., $word)]/text()", word="Shade").get() == "Shade, 7 EUR"


def test_an_xml_response_is_selected_as_xml(make_response: Callable[..., Response]) -> None:
    feed = b"""<?xml version="1.0"?><rss><channel><item><link>http://shop.test/a</link>
    </item><item><link>http://shop.test/b</link></item></channel></rss>"""
    for content_type in ("application/xml", "text/xml", "application/rss+xml"):
        response = make_response(feed, content_type)
        # As XML: <link> keeps its text (in HTML it is a void element, its text lost).
        assert response.xpath("//item/link/text()").getall() == [
            "http://shop.test/a",
            "http://shop.test/b",
        ]
        assert response.selector.type == "xml"
    assert make_response(PAGE, "application/xhtml+xml").selector.type == "html"


def test_the_selector_is_built_once(make_response: Callable[..., Response]) -> None:
    response = make_response(PAGE)
    assert response.selector is response.selector
