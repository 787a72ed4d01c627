"""The evidence of a response keeps its headers as they came (a repeated ``Set-Cookie``
once each, in order), the start of its body, and no more than its bounds, whatever the
site sends; a fetch with no response has none."""

from __future__ import annotations

import pytest

from crawler._fetch import FetchConfig, Fetcher
from crawler._task_steps import evidence_of
from eventlog import EVIDENCE_BODY_BYTES, Evidence, TaskFailed, decode, encode
from eventlog._events import EVIDENCE_HEADER_BYTES
from tests.crawler.hostile_site import Route, serve_hostile

pytestmark = pytest.mark.anyio
BIG = b"<p>" + b"x" * (3 * EVIDENCE_BODY_BYTES) + b"</p>"


async def test_repeated_headers_stay_separate_and_the_body_is_cut_at_its_bound() -> None:
    routes = {
        "/broken": Route(
            BIG,
            status=503,
            headers=(("Set-Cookie", "a=1; Path=/"), ("Set-Cookie", "b=2; HttpOnly")),
        )
    }
    async with serve_hostile(routes) as site, Fetcher(FetchConfig()) as fetcher:
        result = await fetcher.fetch(site.url + "/broken")
    evidence = evidence_of(result)
    assert evidence is not None
    assert [v for n, v in evidence.headers if n.lower() == "set-cookie"] == [
        "a=1; Path=/",
        "b=2; HttpOnly",
    ]
    assert evidence.status == 503 and evidence.content_type == "text/html; charset=utf-8"
    assert evidence.body == BIG[:EVIDENCE_BODY_BYTES]
    assert (evidence.body_bytes, evidence.truncated) == (len(BIG), True)
    # Compressed in the event, and the event round-trips with it.
    assert len(evidence.body_z) < EVIDENCE_BODY_BYTES // 10
    failed = TaskFailed(actor="w", task_id="t", attempt=1, reason="HTTP 503", evidence=evidence)
    assert decode(encode(failed)) == failed


async def test_a_fetch_without_a_response_has_no_evidence() -> None:
    async with serve_hostile({}) as site:
        port = site.port
    async with Fetcher(FetchConfig()) as fetcher:
        result = await fetcher.fetch(f"http://127.0.0.1:{port}/gone")  # nobody listens now
    assert result.error is not None and evidence_of(result) is None


def test_endless_headers_are_cut_and_said_to_be() -> None:
    headers = [("x-junk", "y" * 1000)] * 100
    evidence = Evidence.of("http://a.test/", 500, headers, b"")
    assert evidence.headers_truncated
    assert sum(len(n) + len(v) for n, v in evidence.headers) <= EVIDENCE_HEADER_BYTES
    assert evidence.body == b"" and not evidence.truncated
