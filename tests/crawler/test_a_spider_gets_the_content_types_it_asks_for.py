"""Which responses reach ``parse`` is the spider's ``content_types``: one that asks for JSON
and text gets them (``response.json()``, ``response.text``, every header), and not the
HTML it did not ask for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from crawler._spider import SiteSpider, Spider, accepted_types, load_spider, parses
from crawler.testsite import JSON_PATH, OTHER_TYPE_ITEMS, TEXT_PATH, serve_testsite
from eventlog import ConfigError, EventLog, ItemScraped, TaskDone, TaskEnqueued

pytestmark = pytest.mark.anyio


async def test_a_spider_asking_for_json_and_text_parses_them_and_not_html(
    start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    async with serve_testsite(pages=10, seed=4) as site:
        seeds = [site.url + JSON_PATH, site.url + TEXT_PATH, site.url + "/"]
        await start_job(
            seeds, spider="tests.crawler.spiders:OtherTypesSpider", scope="host", max_depth=1
        )
        with anyio.fail_after(60):
            worker = await worker_process("w1", "--exit-when-done")
            assert await worker.wait() == 0
        requested = {request.path for request in site.requests}
    events = [e.event for e in await log.read_range()]
    items = {e.key: e.data for e in events if isinstance(e, ItemScraped)}
    numbers = range(1, OTHER_TYPE_ITEMS + 1)
    json_items = {f"json {n}": {"total": "3", "type": "application/json"} for n in numbers}
    text_items = {
        f"text item {n}: /item/{n}": {"total": "3", "type": "text/plain"} for n in numbers
    }
    assert items == {**json_items, **text_items}  # nothing from the HTML home page
    # The JSON's relative hrefs ("../item/1") were followed, as HTML pages given no parse.
    assert {f"/item/{n}" for n in numbers} <= requested
    enqueued = {e.task_id for e in events if isinstance(e, TaskEnqueued)}
    assert len(enqueued) == len(seeds) + OTHER_TYPE_ITEMS
    assert {e.task_id for e in events if isinstance(e, TaskDone)} == enqueued


def test_the_base_spider_takes_every_type_and_the_site_spider_html_only() -> None:
    every, html = accepted_types(Spider()), accepted_types(SiteSpider())
    assert parses(every, "text/plain") and parses(every, "")
    assert parses(html, "text/html") and parses(html, "application/xhtml+xml")
    assert not parses(html, "application/json") and not parses(html, "text/plain")


def test_content_types_may_name_a_whole_type_and_a_bare_string_is_one_type() -> None:
    class Texts(Spider):
        content_types = ("Text/*",)

    class Json(Spider):
        content_types = "application/json"

    texts, json = accepted_types(Texts()), accepted_types(Json())
    assert parses(texts, "text/plain") and parses(texts, "text/csv")
    assert not parses(texts, "application/json")
    assert json == frozenset({"application/json"})


def test_a_content_type_that_is_no_media_type_is_a_config_error() -> None:
    class Wrong(Spider):
        name = "wrong"
        content_types = ("json",)

    with pytest.raises(ConfigError, match="spider wrong: content type 'json' is not a media"):
        accepted_types(Wrong())


class WrongTypes(Spider):
    """Loaded by ``load_spider`` in the test below."""

    name = "wrong-types"
    content_types = ("html",)


def test_load_spider_refuses_a_spider_with_a_bad_content_type() -> None:
    with pytest.raises(ConfigError, match="spider wrong-types: content type 'html'"):
        load_spider(f"{__name__}:WrongTypes")
