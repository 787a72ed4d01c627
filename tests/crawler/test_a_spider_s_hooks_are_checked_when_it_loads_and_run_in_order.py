"""``middlewares_of``: hooks resolved once (classes made), refused with the spider's name
when an entry has neither method; ``Middlewares.request`` runs the request hooks in order,
refuses a changed URL, and turns ``DropRequest`` (or Scrapy's ``IgnoreRequest``) into a
`Dropped` with the reason."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from crawler import DropRequest, OutgoingRequest, Spider
from crawler._middlewares import Dropped, middlewares_of
from eventlog import ConfigError

pytestmark = pytest.mark.anyio


class First:
    def process_request(self, request: OutgoingRequest) -> None:
        request.headers["order"] = "first"


class Second:
    async def process_request(self, request: OutgoingRequest) -> OutgoingRequest:
        replaced = OutgoingRequest(
            url=request.url, method="POST", headers=request.headers, body=b"x", task_id="t"
        )
        replaced.headers["order"] += ",second"
        return replaced


class Refuses:
    def process_request(self, request: OutgoingRequest) -> None:
        raise DropRequest("")


class Moves:
    def process_request(self, request: OutgoingRequest) -> OutgoingRequest:
        return OutgoingRequest(
            url=request.url + "x", method="GET", headers=None, body=None, task_id="t"
        )


def spider_with(*hooks: Any) -> Spider:
    class WithHooks(Spider):
        middlewares: ClassVar[tuple[Any, ...]] = hooks

    return WithHooks()


def request() -> OutgoingRequest:
    return OutgoingRequest(url="http://a.test/", method="GET", headers=None, body=None, task_id="t")


async def test_request_hooks_run_in_order_and_a_replacement_is_passed_on() -> None:
    out = await middlewares_of(spider_with(First, Second())).request(request())
    assert isinstance(out, OutgoingRequest)
    assert (out.method, out.body, out.headers) == ("POST", b"x", {"order": "first,second"})


async def test_a_drop_without_a_reason_is_named_by_its_hook() -> None:
    out = await middlewares_of(spider_with(First, Refuses)).request(request())
    assert isinstance(out, Dropped) and out.reason == "dropped: by Refuses"


async def test_a_hook_that_changes_the_url_is_refused() -> None:
    with pytest.raises(TypeError, match="changed the URL"):
        await middlewares_of(spider_with(Moves)).request(request())


def test_an_entry_with_neither_method_is_refused_naming_the_spider() -> None:
    with pytest.raises(ConfigError, match=r"spider spider: middleware .* has neither"):
        middlewares_of(spider_with(object()))
