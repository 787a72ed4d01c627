"""A flow's worker SIGKILLed after a "confirm shipment" reached the site and before its
answer came back (its intent logged, its outcome not): the restarted worker runs the
recovery path and, by the action's policy, verifies (the console shows the order
confirmed: skipped), asks a person (the task waits until ``resolve``: ``--done`` goes on,
``--abort`` fails it) or aborts (the task fails) — never a second confirmation. Every open
order is confirmed once, each one's item written once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import RunningSite
from eventlog import (
    ActionDone,
    EventLog,
    JobKeys,
    TaskFailed,
    TaskQueue,
    resolve_action,
)
from tests.crawler.browser.flow_kills import (
    item_keys,
    kill_when_answering,
    run_crawlog,
    start_flow,
)

pytestmark = pytest.mark.anyio
SLOW_ORDER = "O0014"
"""On the open orders' second page: the flow has checkpointed a page and more by then."""


async def _killed_between_intent_and_outcome(
    site: RunningSite,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    env: dict[str, str],
) -> None:
    await start_flow(site, start_job)
    await kill_when_answering(
        site, worker_process, env, SLOW_ORDER, lambda: SLOW_ORDER in site.orders.confirmations
    )


async def test_verify_finds_the_order_confirmed_and_goes_on_without_confirming_again(
    chromium: str,
    site: RunningSite,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: Any,
    job: str,
) -> None:
    env = {"FLOW_POLICY": "verify"}
    with anyio.fail_after(90):
        await _killed_between_intent_and_outcome(site, start_job, worker_process, env)
        again = await worker_process("w1", "--exit-when-done", env=env)
        assert await again.wait() == 0
    open_orders = site.orders.ids("open")
    assert site.orders.confirmations == dict.fromkeys(open_orders, 1)
    events = [e.event for e in await EventLog(redis_client, JobKeys(job)).read_range()]
    assert sorted(item_keys(events)) == open_orders  # each once: none duplicated, none lost
    verified = [e for e in events if isinstance(e, ActionDone) and e.result == "verified"]
    assert [e.action_id for e in verified] == [f"confirm:{SLOW_ORDER}"]


async def test_ask_waits_for_a_person_and_resumes_once_they_say_it_ran(
    chromium: str,
    site: RunningSite,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: Any,
    job: str,
) -> None:
    env = {"FLOW_POLICY": "ask"}
    queue = TaskQueue(redis_client, job, "observer")
    with anyio.fail_after(90):
        await _killed_between_intent_and_outcome(site, start_job, worker_process, env)
        waiting = await worker_process("w1", "--exit-when-done", env=env)
        assert await waiting.wait() == 0  # nothing left but what waits for a person
        left, asking = await queue.left()
        assert left == 1 and len(asking) == 1
        assert site.orders.confirmations[SLOW_ORDER] == 1
        await resolve_action(
            redis_client, JobKeys(job), asking[0], "done", actor="test", reason="seen shipped"
        )
        done = await worker_process("w1", "--exit-when-done", env=env)
        assert await done.wait() == 0
    open_orders = site.orders.ids("open")
    assert site.orders.confirmations == dict.fromkeys(open_orders, 1)
    events = [e.event for e in await EventLog(redis_client, JobKeys(job)).read_range()]
    assert sorted(item_keys(events)) == open_orders


async def test_abort_fails_the_task_and_confirms_nothing_more(
    chromium: str,
    site: RunningSite,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: Any,
    job: str,
) -> None:
    env = {"FLOW_POLICY": "abort"}
    with anyio.fail_after(90):
        await _killed_between_intent_and_outcome(site, start_job, worker_process, env)
        confirmed = dict(site.orders.confirmations)
        again = await worker_process("w1", "--exit-when-done", env=env)
        assert await again.wait() == 0
    assert site.orders.confirmations == confirmed
    events = [e.event for e in await EventLog(redis_client, JobKeys(job)).read_range()]
    failed = [e for e in events if isinstance(e, TaskFailed)]
    assert len(failed) == 1 and "FlowAborted" in failed[0].reason, failed
    assert f"confirm:{SLOW_ORDER}" in failed[0].reason


async def test_ask_then_a_person_s_abort_fails_the_task_and_confirms_nothing_more(
    chromium: str,
    site: RunningSite,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: Any,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    env = {"FLOW_POLICY": "ask"}
    with anyio.fail_after(90):
        await _killed_between_intent_and_outcome(site, start_job, worker_process, env)
        confirmed = dict(site.orders.confirmations)
        waiting = await worker_process("w1", "--exit-when-done", env=env)
        assert await waiting.wait() == 0
        _, asking = await TaskQueue(redis_client, job, "observer").left()
        said = await run_crawlog(
            valkey_url, "resolve", "--job", job, "--data-dir", str(data_dir),
            "--task", asking[0], "--abort", "--reason", "shipped by hand",
        )  # fmt: skip
        assert "to abort" in said
        aborted = await worker_process("w1", "--exit-when-done", env=env)
        assert await aborted.wait() == 0
    assert site.orders.confirmations == confirmed
    events = [e.event for e in await EventLog(redis_client, JobKeys(job)).read_range()]
    failed = [e for e in events if isinstance(e, TaskFailed)]
    assert len(failed) == 1 and "a person decided to stop" in failed[0].reason, failed
