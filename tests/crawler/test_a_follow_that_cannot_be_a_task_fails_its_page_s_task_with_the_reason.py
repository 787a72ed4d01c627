"""A ``Follow`` is checked where it is yielded: a callback the spider has not (or that is no
method), data msgpack or JSON cannot carry, a method outside the set, a body neither bytes
nor text fail the task of the page that yielded it, with a reason naming what is wrong;
the worker goes on with the rest, and nothing of the refused follow is requested."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from crawler._spider import Follow, SpiderOutputError, check_output
from crawler.testsite import serve_testsite
from eventlog import EventLog, TaskDone, TaskFailed

pytestmark = pytest.mark.anyio

WRONG = {
    "callback": "callback 'parse_missing' is not a method of WrongRequestSpider",
    "attribute": "callback 'name' is not an async method or a generator of WrongRequestSpider",
    "data": "data cannot be carried by its task",
    "method": "method 'FETCH' is not one of DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT",
    "body": "body must be bytes or str, not int",
}


async def test_each_wrong_follow_fails_its_task_with_what_is_wrong(
    start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    async with serve_testsite(pages=20, seed=2) as site:
        seeds = {f"{site.url}/echo/seed?wrong={wrong}": wrong for wrong in [*WRONG, "none"]}
        await start_job(
            list(seeds), spider="tests.crawler.request_spiders:WrongRequestSpider", max_depth=1
        )
        with anyio.fail_after(60):
            worker = await worker_process("w1", "--exit-when-done")
            assert await worker.wait() == 0
        requested = {r.path for r in site.requests}
    assert "/echo/wrong" not in requested
    events = [e.event for e in await log.read_range()]
    failed = {e.task_id: e.reason for e in events if isinstance(e, TaskFailed)}
    done = [e for e in events if isinstance(e, TaskDone)]
    assert len(done) == 1 and len(failed) == len(WRONG)
    for reason in failed.values():
        assert reason.startswith("spider output: spider wrong-request"), reason
    for wrong, why in WRONG.items():
        assert sum(why in reason for reason in failed.values()) == 1, (wrong, failed)


def test_a_form_and_a_body_together_are_refused() -> None:
    with pytest.raises(SpiderOutputError, match="give a body or a form, not both"):
        check_output(
            Follow("/search", body="q=a", form={"q": "b"}), spider="s", url="http://h/", index=3
        )


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({"X-Bad\n": "v"}, "is not an HTTP header name"),
        ({"X-Ok": "line\r\nInjected: yes"}, "contains a line break"),
        ({"X-Ok": 3}, "names and values must be str"),
    ],
)
def test_headers_that_http_cannot_carry_are_refused(headers: dict[str, Any], why: str) -> None:
    with pytest.raises(SpiderOutputError, match=why):
        check_output(Follow("/a", headers=headers), spider="s", url="http://h/", index=0)


def test_a_get_form_is_its_query_and_a_post_form_its_body() -> None:
    got = check_output(
        Follow("/s?x=1", method="GET", form={"q": "a b"}), spider="s", url="http://h/", index=0
    )
    assert isinstance(got, Follow)
    assert (got.url, got.method, got.body) == ("/s?x=1&q=a+b", "GET", None)
    posted = check_output(Follow("/s", form={"q": "a b"}), spider="s", url="http://h/", index=0)
    assert isinstance(posted, Follow)
    assert (posted.method, posted.body) == ("POST", b"q=a+b")
    assert posted.headers == {"Content-Type": "application/x-www-form-urlencoded"}
