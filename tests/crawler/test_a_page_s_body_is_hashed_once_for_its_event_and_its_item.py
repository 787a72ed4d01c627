"""A page's body is hashed once: the worker computes `body_hash` for the page's
`PageFetched` (without a change rule) and hands it to the spider's `Response.body_hash`,
which is the default spider's ``content_hash``; a response given none computes it when it
is first read. Both are the same BLAKE2b of the whole body, whichever computed it."""

from __future__ import annotations

from collections.abc import Callable

from crawler import Response, SiteSpider
from crawler._recrawl import body_hash, change_rule, fetched_validators
from eventlog import Task

PAGE = b"<html><head><title>T</title></head><body><a href='/b'>b</a> at 12:01</body></html>"
TASK = Task(task_id="t", url="http://shop.test/a", site="http://shop.test")


def test_a_response_hashes_its_body_when_first_asked(
    make_response: Callable[..., Response],
) -> None:
    response = make_response(PAGE)
    assert response.body_hash == body_hash(PAGE)
    assert response.body_hash is response.body_hash  # computed once


def test_a_response_keeps_the_hash_the_worker_hands_it(
    make_response: Callable[..., Response],
) -> None:
    handed = "0" * 32  # not the body's: shows the one handed over is what is used
    response = make_response(PAGE, body_hash=handed)
    item, _ = SiteSpider().page_outputs(response)
    assert response.body_hash == handed
    assert item.data["content_hash"] == handed


def test_the_default_spider_s_content_hash_is_the_page_s_event_hash(
    make_response: Callable[..., Response],
) -> None:
    seen = fetched_validators(TASK, 200, {}, PAGE)
    item, _ = SiteSpider().page_outputs(make_response(PAGE))
    assert item.data["content_hash"] == seen.body_hash == body_hash(PAGE)


def test_a_hash_handed_to_the_validators_is_used_only_without_a_change_rule() -> None:
    known = body_hash(PAGE)
    assert fetched_validators(TASK, 200, {}, PAGE, hashed=known).body_hash == known
    rule = change_rule(None, (r"at \d\d:\d\d",))
    assert rule is not None
    region = fetched_validators(TASK, 200, {}, PAGE, rule, hashed=known).body_hash
    assert region == body_hash(rule.content(PAGE)) != known
