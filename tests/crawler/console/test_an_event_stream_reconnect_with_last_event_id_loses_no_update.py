"""The console's event stream over real HTTP: each message's id is its stream ID, and a
reconnect with ``Last-Event-ID`` goes on right after it: every event appended meanwhile
arrives, none twice, in log order; then the stream follows the log live."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import httpx
import pytest

from eventlog import EventLog, JobPaused
from tests.crawler.console.conftest import RunningConsole

pytestmark = pytest.mark.anyio


async def messages(response: httpx.Response) -> AsyncIterator[dict[str, str]]:
    """SSE messages as {field: value}, comments and the retry hint left out."""
    fields: dict[str, str] = {}
    async for line in response.aiter_lines():
        if not line:
            if "data" in fields:
                yield fields
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")


async def read_ids(
    http: httpx.AsyncClient, url: str, count: int, headers: dict[str, str]
) -> list[str]:
    got: list[str] = []
    async with http.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        async for message in messages(response):
            assert message["event"] == "log"
            got.append(message["id"])
            if len(got) == count:
                break
    return got


async def test_a_reconnect_from_the_last_event_id_gets_every_later_event_once(
    start_job: Callable[..., Any],
    console: Callable[..., Awaitable[RunningConsole]],
    log: EventLog,
    job: str,
) -> None:
    await start_job(["http://127.0.0.1:9/"])
    start = await log.last_id()
    assert start is not None
    running = await console()
    url = f"/jobs/{job}/events?after={start}"

    async def append(n: int) -> list[str]:
        ids = [await log.append(JobPaused(actor="t", reason=f"r{i}")) for i in range(n)]
        return [i for i in ids if i is not None]

    with anyio.fail_after(60):
        first = await append(5)
        async with running.session(timeout=10) as http:
            seen = await read_ids(http, url, 3, {})
            assert seen == first[:3]
            # Disconnected: the log goes on without this reader.
            meanwhile = await append(5)
            resumed = await read_ids(http, url, 7, {"Last-Event-ID": seen[-1]})
            assert resumed == first[3:] + meanwhile
            # And after the backlog, live: an event appended while connected arrives.
            async with http.stream("GET", url, headers={"Last-Event-ID": resumed[-1]}) as response:
                live = await append(1)
                async for message in messages(response):
                    assert message["id"] == live[0]
                    break


async def test_a_malformed_last_event_id_is_a_bad_request(
    start_job: Callable[..., Any],
    console: Callable[..., Awaitable[RunningConsole]],
    job: str,
) -> None:
    await start_job(["http://127.0.0.1:9/"])
    running = await console()
    async with running.session(timeout=10) as http:
        answer = await http.get(f"/jobs/{job}/events", headers={"Last-Event-ID": "yesterday"})
    assert answer.status_code == 400
