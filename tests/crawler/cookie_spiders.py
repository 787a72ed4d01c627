"""Spiders of the cookie tests (loaded by workers as ``tests.crawler.cookie_spiders:NAME``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from http import HTTPStatus
from typing import Any

from selectolax.lexbor import LexborHTMLParser
from yarl import URL

from crawler._spider import Follow, Item, Output, Response, Spider
from crawler.testsite import (
    ECHO_PREFIX,
    LOGIN_PASSWORD,
    LOGIN_PATH,
    LOGIN_USER,
    MEMBERS_PREFIX,
    SET_COOKIE_PARAM,
)

AFTER_PATH = ECHO_PREFIX + "/after"
"""What the cookie echo spider fetches once the site has set its cookie."""


class CookieEchoSpider(Spider):
    """From a seed ``/echo?set-cookie=...`` (the site sets that cookie), fetches
    `AFTER_PATH` as a new task and records the Cookie header it was sent (None: none)."""

    name = "cookie-echo"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        if f"{SET_COOKIE_PARAM}=" in response.url:
            yield Follow(AFTER_PATH)
            return
        yield Item(AFTER_PATH, {"cookie": response.json()["headers"].get("cookie")})


class CookieEchoSpiderWithCookies(CookieEchoSpider):
    """The same spider, asking for cookies itself (Scrapy's ``COOKIES_ENABLED``)."""

    cookies = True


class CookieEchoSpiderWithoutCookies(CookieEchoSpider):
    """The same spider, saying it wants none."""

    cookies = False


class LoginSpider(Spider):
    """Logs in through the test site's form (a POST of its fields), then crawls the
    members' pages the session opens: an item per member page, each linking the next."""

    name = "login"
    cookies = True

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        path = URL(response.url).path
        tree = LexborHTMLParser(response.body)
        if path == LOGIN_PATH:
            hidden = tree.css_first('input[name="next"]')
            form = {
                "user": LOGIN_USER,
                "password": LOGIN_PASSWORD,
                "next": str(hidden.attributes.get("value")) if hidden is not None else "",
            }
            # Written for Follow's method and form fields (the requests part of issue 15).
            login: dict[str, Any] = {"method": "POST", "form": form}
            yield Follow(response.url, **login)
            return
        if response.status != HTTPStatus.OK:
            return
        if path.startswith(MEMBERS_PREFIX) and path != MEMBERS_PREFIX:
            secret = tree.css_first(".secret")
            yield Item(response.url, {"secret": secret.text() if secret is not None else None})
        for link in tree.css("a[href]"):
            yield Follow(str(link.attributes.get("href")))
