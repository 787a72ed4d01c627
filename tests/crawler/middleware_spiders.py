"""Spiders with request and response hooks (loaded by workers as
``tests.crawler.middleware_spiders:NAME``), crawling the test site's ``/echo/...``."""

from __future__ import annotations

from collections.abc import AsyncIterator

from crawler import DropRequest, Item, OutgoingRequest, Output, Response, Spider

HOOK_HEADER = "X-Hook"


class Signed:
    """A class (made once per worker): signs each request, drops ``/echo/never``."""

    def __init__(self) -> None:
        self.value = "signed"

    def process_request(self, request: OutgoingRequest) -> None:
        if request.url.endswith("/echo/never"):
            raise DropRequest("never asked for")
        request.headers[HOOK_HEADER] = self.value


class SkipMarked:
    """An async response hook: drops a page whose path says ``skip``, else marks it."""

    async def process_response(self, response: Response) -> Response | None:
        if b"skip" in response.body:
            raise DropRequest("marked skip")
        response.meta["seen_by"] = "SkipMarked"
        return None


class Hooked(Spider):
    name = "hooked"
    middlewares = (Signed, SkipMarked())

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        echoed = response.json()
        headers = {k.lower(): v for k, v in echoed["headers"].items()}
        yield Item(
            echoed["path"],
            {"hook": headers.get(HOOK_HEADER.lower()), "seen_by": response.meta.get("seen_by")},
        )
