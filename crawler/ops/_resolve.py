"""A person's decision about a task's uncertain ``response.once`` action.

A worker that died during the action leaves its intent in the log and not its
completion; the next worker pauses the task for a person. ``done``: it ran, and the task
resumes without running it again; ``redo``: it did not, and the task resumes and runs it
once more. ``crawlog resolve`` and the console's Done / Redo buttons both decide here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from crawler.ops._flow_tail import FlowTail, flow_tail_lines
from crawler.ops._job import OpenJob
from eventlog import Decision, JobKeys, TaskQueue, resolve_action, uncertain_action

if TYPE_CHECKING:
    import redis.asyncio as aioredis

STATUS_CONSUMER = "status"
"""The queue's consumer name for reading what is left (it claims nothing)."""


async def resolve(job: OpenJob, task_id: str, decision: Decision, reason: str, by: str) -> str:
    """Record the decision (``OperatorRefused`` if the task has no action waiting for one);
    what was done, in a line."""
    done = await resolve_action(job.client, job.keys, task_id, decision, actor=by, reason=reason)
    what = {
        "done": "done: it will be skipped",
        "redo": "to redo: it will run again",
        "abort": "to abort: the task will fail when it resumes",
    }[decision]
    return f"resolved action {done.action_id} of task {task_id} as {what} (by {by}: {reason})"


async def needs_a_person(client: aioredis.Redis, keys: JobKeys) -> list[tuple[str, str]]:
    """The tasks paused for a person to decide about, each with what they decide about (an
    uncertain action, or a flow's step ``step:NAME:ITEM``), by task id."""
    _, waiting = await TaskQueue(client, keys, STATUS_CONSUMER).left()
    found = []
    for task_id in waiting:
        uncertain = await uncertain_action(client, keys, task_id)
        if uncertain is not None:
            found.append((task_id, uncertain[1]))
    return found


def needs_a_person_lines(
    job: str, waiting: list[tuple[str, str]], tails: Mapping[str, FlowTail] | None = None
) -> list[str]:
    """What ``crawlog status`` (and ``report``, with ``tails``: each flow's last events)
    says of the tasks waiting for a person: none, or a line a task and the commands that
    show its report and decide."""
    if not waiting:
        return []
    lines = [f"Needs a person: {len(waiting)} task(s) wait for a decision"]
    for task_id, what in waiting:
        lines.append(f"  {task_id}: {what}")
        if tails and task_id in tails:
            lines += flow_tail_lines(tails[task_id], indent="    ")
    lines.append(
        f"  see: crawlog evidence --job {job} TASK --out DIR; decide: crawlog resolve --job "
        f"{job} --task TASK --done|--redo|--abort --reason ..."
    )
    return lines
