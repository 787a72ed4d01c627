"""``response.follow`` and ``follow_all`` as in Scrapy: an href or a selector (of an ``<a>`` or
``<link>``, or of an attribute) resolved against the page's ``<base href>`` or the page,
keywords passed to ``Follow`` as they are; ``follow_all`` skips selected elements without
an href and leaves out (and counts) what the job's link rules deny."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from crawler import Follow, Response, SpiderOutputError
from crawler._rules import DENIED_BY_RULE, LinkRules

PAGE = b"""<html><head><link rel="next" href="?page=2"></head><body>
<a href="/item/1">one</a> <a href="../item/2">two</a> <a>no href</a>
<a href="mailto:shop@example.com">mail</a> <img src="/lamp.png"> <div id="d">d</div>
</body></html>"""
URL = "http://shop.test/list/a"


def test_a_relative_href_is_resolved_against_the_page(
    make_response: Callable[..., Response],
) -> None:
    response = make_response(PAGE, url=URL)
    assert response.follow("/item/9") == Follow("http://shop.test/item/9")
    assert response.follow("b?page=3") == Follow("http://shop.test/list/b?page=3")
    assert response.follow("http://other.test/x#top") == Follow("http://other.test/x")


def test_a_base_href_is_what_follow_resolves_against(
    make_response: Callable[..., Response],
) -> None:
    based = make_response(b'<html><head><base href="/shelf/"></head></html>', url=URL)
    assert based.follow("item/1") == Follow("http://shop.test/shelf/item/1")


def test_keywords_go_to_follow_as_they_are(make_response: Callable[..., Response]) -> None:
    assert make_response(PAGE).follow("/item/1", priority=5) == Follow(
        "http://shop.test/item/1", priority=5
    )
    follows = make_response(PAGE).follow_all(["/item/1"], priority=2)
    assert follows == [Follow("http://shop.test/item/1", priority=2)]
    asked = {"callback": "parse_item", "data": {"n": 1}, "method": "POST", "body": b"x"}
    assert make_response(PAGE).follow("/item/1", **asked) == Follow(
        "http://shop.test/item/1", **asked
    )
    assert make_response(PAGE).follow_all(css="a", **asked)[0] == Follow(
        "http://shop.test/item/1", **asked
    )


def test_a_link_element_or_an_attribute_selector_is_followed(
    make_response: Callable[..., Response],
) -> None:
    response = make_response(PAGE, url=URL)
    assert response.follow(response.css("a")[0]) == Follow("http://shop.test/item/1")
    assert response.follow(response.css("link")[0]) == Follow("http://shop.test/list/a?page=2")
    assert response.follow(response.css("img::attr(src)")[0]) == Follow("http://shop.test/lamp.png")
    assert response.follow(response.xpath("//a/@href")[1]) == Follow("http://shop.test/item/2")


def test_what_follow_cannot_take_is_a_spider_output_error(
    make_response: Callable[..., Response],
) -> None:
    response = make_response(PAGE)
    with pytest.raises(SpiderOutputError, match="not <div>"):
        response.follow(response.css("#d")[0])
    with pytest.raises(SpiderOutputError, match="SelectorList"):
        response.follow(response.css("a"))  # type: ignore[arg-type]
    with pytest.raises(SpiderOutputError, match="exactly one"):
        response.follow_all(["/a"], css="a")
    with pytest.raises(SpiderOutputError, match="exactly one"):
        response.follow_all()


def test_a_non_http_href_is_kept_as_written_for_the_worker_to_drop_and_count(
    make_response: Callable[..., Response],
) -> None:
    assert make_response(PAGE).follow("mailto:shop@example.com") == Follow(
        "mailto:shop@example.com"
    )


def test_follow_all_takes_css_xpath_or_urls_and_skips_elements_without_an_href(
    make_response: Callable[..., Response],
) -> None:
    response = make_response(PAGE, url=URL)
    expected = [
        Follow("http://shop.test/item/1"),
        Follow("http://shop.test/item/2"),
        Follow("mailto:shop@example.com"),
    ]
    assert response.follow_all(css="a") == expected
    assert response.follow_all(css="a::attr(href)") == expected
    assert response.follow_all(xpath="//a") == expected
    assert response.follow_all(response.css("a")) == expected
    assert response.follow_all(["/item/1", "../item/2"]) == expected[:2]
    assert response.dropped == {}


def test_follow_all_gives_each_url_once(make_response: Callable[..., Response]) -> None:
    response = make_response(PAGE, url=URL)
    again = ["/item/1", "/item/1", "http://shop.test/item/1#top", "../item/1"]
    assert response.follow_all(again) == [Follow("http://shop.test/item/1")]


def test_follow_all_leaves_out_and_counts_what_a_rule_denies(
    make_response: Callable[..., Response],
) -> None:
    rules = LinkRules(allow=(r"/item/",), deny=(r"/item/2$",))
    response = make_response(PAGE, url=URL, link_rules=rules)
    assert response.follow_all(css="a") == [Follow("http://shop.test/item/1")]
    assert response.dropped == {DENIED_BY_RULE: 2}  # item 2 denied; mailto: not allowed
    # response.follow is the spider's own decision: no rule applies to it.
    assert response.follow("/item/2") == Follow("http://shop.test/item/2")
