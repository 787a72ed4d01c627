"""A request is carried by its task as msgpack (``Request.to_dict``), never pickled: one
whose meta or cb_kwargs would not come back as it is, or whose callback is not a method of
the spider, is refused with the reason, and one that can is carried whole."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from scrapy import Request, Spider
from scrapy.utils.request import request_from_dict

from crawler.scrapy._scheduler import RequestRefused, carried


class Shop(Spider):
    name = "shop"

    def parse_item(self, response: Any) -> None:
        pass


@pytest.mark.parametrize(
    ("meta", "cb_kwargs", "why"),
    [
        ({"session": object()}, {}, "meta or cb_kwargs cannot be encoded"),
        ({}, {"seen": {1, 2}}, "its cb_kwargs would not come back as it is"),
    ],
    ids=["an object in meta", "a set in cb_kwargs"],
)
def test_a_request_whose_meta_or_cb_kwargs_cannot_be_carried_is_refused(
    meta: dict[str, Any], cb_kwargs: dict[str, Any], why: str
) -> None:
    spider = Shop()
    request = Request("http://127.0.0.1/a", meta=meta, cb_kwargs=cb_kwargs)
    with pytest.raises(RequestRefused, match=why):
        carried(request, spider)


def test_a_callback_that_is_not_a_method_of_the_spider_is_refused() -> None:
    request = Request("http://127.0.0.1/a", callback=lambda response: None)
    with pytest.raises(RequestRefused, match="its callback cannot be named"):
        carried(request, Shop())


def test_a_request_that_can_be_carried_comes_back_whole() -> None:
    spider = Shop()
    request = Request(
        "http://127.0.0.1/a?b=1",
        method="POST",
        body=b"q=1",
        headers={"X-Token": "t"},
        callback=spider.parse_item,
        meta={"page": 2, "path": ("a", "b")},
        cb_kwargs={"category": "books"},
        priority=5,
    )
    back = request_from_dict(msgspec.msgpack.decode(carried(request, spider)), spider=spider)
    assert (back.url, back.method, back.body, back.priority) == (
        request.url, "POST", b"q=1", 5,
    )  # fmt: skip
    assert back.headers.get("X-Token") == b"t"
    assert back.callback == spider.parse_item
    assert back.cb_kwargs == {"category": "books"}
    assert back.meta["page"] == 2
