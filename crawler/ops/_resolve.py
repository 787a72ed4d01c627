"""A person's decision about a task's uncertain ``response.once`` action.

A worker that died during the action leaves its intent in the log and not its
completion; the next worker pauses the task for a person. ``done``: it ran, and the task
resumes without running it again; ``redo``: it did not, and the task resumes and runs it
once more. ``crawlog resolve`` and the console's Done / Redo buttons both decide here.
"""

from __future__ import annotations

from crawler.ops._job import OpenJob
from eventlog import Decision, resolve_action


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
