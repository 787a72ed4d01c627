"""A task failed by its spider's exception says where the spider raised it: the reason ends
with ``at FILE:LINE in FUNCTION`` (the innermost frame of the spider's own code, not
crawlog's, Python's or a library's), kept within its bound whatever the message, and the
evidence keeps the traceback."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from crawler._scraper import (
    SPIDER_ERROR_MAX,
    spider_error_reason,
    spider_frame,
    where_raised,
)
from eventlog import EventLog, TaskFailed
from eventlog._events import EVIDENCE_TRACEBACK_CHARS
from tests.crawler import spiders
from tests.crawler.hostile_site import Route, serve_hostile

CRAWLOG = ("/src/crawler/",)
LIBRARIES = ("/usr/lib/python3.11/", "/venv/site-packages/")
WORKER = ("/src/crawler/_task_steps.py", 300, "_parse_step")
SPIDER = ("/home/me/myspider.py", 42, "parse")
HELPER = ("/home/me/helpers.py", 7, "price_of")
STDLIB = ("/usr/lib/python3.11/json/decoder.py", 355, "raw_decode")


def test_the_spider_s_innermost_own_frame_is_named() -> None:
    assert spider_frame([WORKER, SPIDER], CRAWLOG, LIBRARIES) == SPIDER
    assert spider_frame([WORKER, SPIDER, HELPER], CRAWLOG, LIBRARIES) == HELPER


def test_a_library_s_frame_gives_way_to_the_spider_s_that_called_it() -> None:
    assert spider_frame([WORKER, SPIDER, STDLIB], CRAWLOG, LIBRARIES) == SPIDER
    # Raised in a library called by crawlog alone: the library's frame is the best there is.
    assert spider_frame([WORKER, STDLIB], CRAWLOG, LIBRARIES) == STDLIB


def test_an_error_of_crawlog_s_own_names_no_place() -> None:
    assert spider_frame([WORKER], CRAWLOG, LIBRARIES) is None
    assert spider_error_reason(KeyError("price"), None) == "spider error: KeyError: 'price'"


def test_the_reason_names_the_place_and_keeps_it_within_its_bound() -> None:
    where = "myspider.py:42 in parse"
    reason = spider_error_reason(KeyError("price"), where)
    assert reason == "spider error: KeyError: 'price' at myspider.py:42 in parse"
    long = spider_error_reason(ValueError("x" * 1000), where)
    assert len(long) == SPIDER_ERROR_MAX and long.endswith(" at " + where)


def test_where_an_exception_was_raised_is_this_file_s_line() -> None:
    try:
        {}["price"]
    except KeyError as exc:
        line = inspect.currentframe().f_lineno - 2  # type: ignore[union-attr]
        assert where_raised(exc) == f"{__name__.rpartition('.')[2]}.py:{line} in " + (
            "test_where_an_exception_was_raised_is_this_file_s_line"
        )


@pytest.mark.anyio
async def test_a_crawl_s_failed_task_names_the_spider_s_line_and_keeps_its_traceback(
    start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    source, first = inspect.getsourcelines(spiders.PriceSpider.parse)
    line = first + next(i for i, text in enumerate(source) if 'row["price"]' in text)
    async with serve_hostile({"/shop": Route(b"<html><body>no price</body></html>")}) as site:
        await start_job([site.url + "/shop"], spider="tests.crawler.spiders:PriceSpider")
        with anyio.fail_after(60):
            worker = await worker_process("w1", "--exit-when-done")
            assert await worker.wait() == 0
    [failed] = [e.event for e in await log.read_range() if isinstance(e.event, TaskFailed)]
    assert failed.reason == f"spider error: KeyError: 'price' at spiders.py:{line} in parse"
    assert failed.evidence is not None and failed.evidence.traceback is not None
    traceback = failed.evidence.traceback
    assert len(traceback) <= EVIDENCE_TRACEBACK_CHARS
    assert traceback.rstrip().endswith("KeyError: 'price'")
    assert f'spiders.py", line {line}, in parse' in traceback
