"""Dead letters on the console: listed with their reasons; Replay (with a reason) puts one
that decodes now back once, whatever is submitted again, and refuses one that does not."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import anyio
import msgspec
import pytest
import redis.asyncio as aioredis

from eventlog import LANE_NORMAL, EventLog, JobKeys, PoisonEntry, Task, TaskQueue
from tests.crawler.console.conftest import RunningConsole

pytestmark = pytest.mark.anyio
FORM = re.compile(r'<form method="post".*?</form>', re.S)
FIELD = re.compile(r'<input type="hidden" name="(\w+)" value="([^"]*)">')


async def test_a_readable_dead_letter_is_put_back_once_and_an_unreadable_one_is_refused(
    start_job: Callable[..., object],
    console: Callable[..., Awaitable[RunningConsole]],
    redis_client: aioredis.Redis,
    make_queue: Callable[..., TaskQueue],
    log: EventLog,
    job: str,
) -> None:
    await start_job(["http://127.0.0.1:8765/"])
    keys = JobKeys(job)
    queue = make_queue("w1")
    assert len(await queue.claim(10)) == 1  # the seed, out of the way
    await redis_client.xadd(keys.tasks(LANE_NORMAL), {"t": b"\xc1 not msgpack"})
    assert await queue.claim(10) == [] and queue.poisoned == 1
    task = Task(task_id="t-later", url="http://127.0.0.1:8765/later", site="http://127.0.0.1:8765")
    readable = PoisonEntry(
        keys.tasks(LANE_NORMAL), "1-1", "unknown field (old worker)",
        {b"t": msgspec.msgpack.encode(task)},
    )  # fmt: skip
    await log.dead_letter(readable)
    running = await console()
    with anyio.fail_after(60):
        async with running.session(timeout=20) as http:
            page = (await http.get(f"/jobs/{job}/dead")).text
            assert "task does not decode" in page and "unknown field (old worker)" in page
            bad, good = (dict(FIELD.findall(form)) for form in FORM.findall(page))
            action = f"/jobs/{job}/dead/replay"
            refused = await http.post(action, data={**bad, "reason": "r"}, follow_redirects=True)
            assert "still does not decode" in refused.text
            first = await http.post(action, data={**good, "reason": "upgraded"})
            assert first.status_code == 303
            said = (await http.get(first.headers["location"])).text
            assert "replayed" in said and "(by tester@console: upgraded)" in said
            again = await http.post(
                action, data={**good, "reason": "upgraded"}, follow_redirects=True
            )
            assert "(by tester@console: upgraded)" in again.text  # the first outcome
            other = await http.post(
                action, data={**good, "form_id": "other", "reason": "x"}, follow_redirects=True
            )
            assert "already replayed?" in other.text
    entries = await redis_client.xrange(keys.tasks(LANE_NORMAL))
    # The client crawlog configures reads entries raw: fields as a flat list.
    encoded = msgspec.msgpack.encode(task)
    assert sum(encoded in list(fields) for _, fields in entries) == 1
