"""``response.text``, ``css`` and ``xpath`` read a page in the encoding Scrapy would (w3lib's
rules): a Latin-1 page that says so in ``<meta charset>`` and not in its header reads
"Café déjà"; when the header and the ``<meta>`` disagree the header wins; a page that
declares nothing is read as the first of ASCII, UTF-8 and cp1252 that decodes it. Through
the real ``crawlog crawl`` against a real server on 127.0.0.1."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from eventlog import EventLog, ItemScraped
from tests.crawler.conftest import ROOT
from tests.crawler.hostile_site import Route, serve_hostile

pytestmark = pytest.mark.anyio

WORDS = "Café déjà"


def page(meta: str, text: str, encoding: str, links: str = "") -> bytes:
    head = f"<head>{meta}<title>{text}</title></head>"
    return f"<html>{head}<body><h1>{text}</h1>{links}</body></html>".encode(encoding)


ROUTES = {
    "/": Route(
        page(
            '<meta charset="iso-8859-1">',
            WORDS,
            "latin-1",
            '<a href="/equiv">e</a><a href="/conflict">c</a><a href="/plain">p</a>',
        ),
        content_type="text/html",
    ),
    "/equiv": Route(
        page(
            '<meta http-equiv="Content-Type" content="text/html; charset=windows-1252">',
            WORDS + " \u2013 ok",
            "cp1252",
        ),
        content_type="text/html",
    ),
    # UTF-8 bytes, a <meta> saying Latin-1, the header saying UTF-8: the header is right.
    "/conflict": Route(
        page('<meta charset="iso-8859-1">', WORDS, "utf-8"),
        content_type="text/html; charset=utf-8",
    ),
    # Nothing declared, and not UTF-8: cp1252, as Scrapy guesses.
    "/plain": Route(page("", WORDS, "cp1252"), content_type="text/html"),
}


async def test_each_page_is_read_in_its_declared_encoding_the_header_first(
    valkey_url: str, data_dir: Path, job: str, log: EventLog
) -> None:
    env = {**os.environ, "REDIS_URL": valkey_url}
    async with serve_hostile(ROUTES) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--job", job,
            "--spider", "tests.crawler.spider_api_spiders:CharsetSpider",
            "--workers", "1", "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(90):
            result = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stderr.decode()
    events = [entry.event for entry in await log.read_range()]
    items = {e.key.removeprefix(site.url): e.data for e in events if isinstance(e, ItemScraped)}
    assert items == {
        "/": {
            "url": site.url + "/", "h1": WORDS, "title": WORDS, "encoding": "cp1252",
            "in_text": True,
        },
        "/equiv": {
            "url": site.url + "/equiv", "h1": WORDS + " \u2013 ok", "title": WORDS + " \u2013 ok",
            "encoding": "cp1252", "in_text": True,
        },
        "/conflict": {
            "url": site.url + "/conflict", "h1": WORDS, "title": WORDS, "encoding": "utf-8",
            "in_text": True,
        },
        "/plain": {
            "url": site.url + "/plain", "h1": WORDS, "title": WORDS, "encoding": "cp1252",
            "in_text": True,
        },
    }  # fmt: skip
