"""Pages whose charset is bogus or whose bytes are invalid in it still yield their links and
an item; a body whose content encoding is broken fails its task, saying so."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from crawler._fetch import ERROR_BAD_ENCODING
from crawler._links import parse_page
from eventlog import EventLog, ItemScraped, TaskDone, TaskFailed
from tests.crawler.hostile_site import Route, serve_hostile

pytestmark = pytest.mark.anyio

# Invalid UTF-8 (a lone continuation byte, an overlong form, a surrogate), a NUL, Latin-1.
GARBAGE = b"\x80 \xc0\xaf \xed\xa0\x80 \x00 caf\xe9"


def page(title: bytes, *links: str, head: bytes = b"") -> bytes:
    anchors = b"".join(f'<a href="{link}">x</a>'.encode() + GARBAGE for link in links)
    return b"<html><head>" + head + b"<title>" + title + b"</title></head><body>" + anchors


ROUTES = {
    "/": Route(
        page(b"home " + GARBAGE, "/unknown", "/idna", "/meta", "/undefined", "/gzip"),
        content_type="text/html; charset=bogus-9",
    ),
    "/unknown": Route(page(b"unknown", "/leaf"), content_type="text/html; charset=x-nonsense"),
    # Codecs Python has, but that are no page encoding and refuse to replace bad bytes.
    "/idna": Route(page(b"idna", "/leaf"), content_type="text/html; charset=idna"),
    "/undefined": Route(page(b"undef", "/leaf"), content_type='text/html; charset="undefined"'),
    "/meta": Route(
        page(b"meta", "/leaf", head=b'<meta charset="no-such-charset">'),
        content_type="text/html",
    ),
    "/leaf": Route(b"<title>leaf</title>" + GARBAGE),
    # Says gzip, is not: the body cannot be decoded at all.
    "/gzip": Route(b"not gzip" * 10, headers=(("Content-Encoding", "gzip"),)),
}


@pytest.mark.parametrize("charset", ["idna", "undefined", "bogus-9", "utf-8", None])
def test_parsing_with_any_charset_never_raises(charset: str | None) -> None:
    found = parse_page(page(b"t", "/a"), "http://h.example/", charset=charset)
    assert found.links == ["http://h.example/a"]


async def test_a_crawl_of_pages_with_bogus_charsets_records_every_page(
    start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    async with serve_hostile(ROUTES) as site:
        await start_job([site.url + "/"], max_attempts=2)
        with anyio.fail_after(60):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
        # Every link was found through the garbage: /leaf is only linked from bad pages.
        assert set(ROUTES) <= set(site.requests)
    events = [e.event for e in await log.read_range()]
    done = {e.task_id for e in events if isinstance(e, TaskDone)}
    items = {e.key: e.data for e in events if isinstance(e, ItemScraped)}
    assert len(done) == len(ROUTES) - 1 == len(items)
    assert items[site.url + "/"]["title"].startswith("home ")
    failed = [e for e in events if isinstance(e, TaskFailed)]
    assert [e.reason for e in failed] == [ERROR_BAD_ENCODING]
