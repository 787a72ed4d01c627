"""Pausing and resuming the job, a site or a task, with who and why.

Each is one ``apply_control`` call: the event and the flag workers poll, in one script. A
resume of a site or a task moves its parked tasks back to their lanes in the same step.
``crawlog pause|resume`` says "nothing written" when the target already is as asked; the
console's buttons, which show a state the operator saw, refuse then instead
(:func:`control_site`).
"""

from __future__ import annotations

from crawler.ops._job import OpenJob, resolve_site
from eventlog import (
    Controls,
    JobPaused,
    JobResumed,
    OperatorRefused,
    SitePaused,
    SiteResumed,
    TaskPaused,
    TaskResumed,
    apply_control,
    read_controls,
    uncertain_action,
)
from projector import TERMINAL


def _verb(pause: bool) -> str:
    return "paused" if pause else "resumed"


async def pause_or_resume(
    job: OpenJob,
    reason: str,
    by: str,
    *,
    pause: bool,
    site: str | None = None,
    task_id: str | None = None,
) -> str:
    """Pause (or resume) one task, one site (as the operator typed it: see
    ``resolve_site``) or else the whole job; what was done, in a line."""
    controls = await read_controls(job.client, job.keys)
    if task_id is not None:
        return await _control_task(job, controls, task_id, reason, by, pause=pause)
    if site is not None:
        found = await resolve_site(job, site, also=controls.paused_sites)
        if pause == (found in controls.paused_sites):
            return f"site {found} is {'already' if pause else 'not'} paused; nothing written"
        return await _control_site(job, found, reason, by, pause=pause)
    if pause == controls.job_paused:
        return f"job {job.keys.job} is {'already' if pause else 'not'} paused; nothing written"
    event = (JobPaused if pause else JobResumed)(actor=by, reason=reason)
    await apply_control(job.client, job.keys, event)
    return f"{_verb(pause)} job {job.keys.job} by {by}: {reason}"


async def control_site(job: OpenJob, site: str, reason: str, by: str, *, pause: bool) -> str:
    """Pause or resume one site (named exactly), refused if it already is as asked (someone
    else acted meanwhile); what was done, in a line."""
    controls = await read_controls(job.client, job.keys)
    if pause == (site in controls.paused_sites):
        raise OperatorRefused(
            f"site {site} is {'already' if pause else 'not'} paused (someone else may have "
            "acted meanwhile); nothing written"
        )
    return await _control_site(job, site, reason, by, pause=pause)


async def _control_site(job: OpenJob, site: str, reason: str, by: str, *, pause: bool) -> str:
    event = (SitePaused if pause else SiteResumed)(actor=by, site=site, reason=reason)
    moved = await apply_control(job.client, job.keys, event)
    back = "" if pause else f"; {moved} parked task(s) back in the queue"
    return f"{_verb(pause)} site {site} by {by}: {reason}{back}"


async def _control_task(
    job: OpenJob, controls: Controls, task_id: str, reason: str, by: str, *, pause: bool
) -> str:
    subject = f"task {task_id}"
    if pause == (task_id in controls.paused_tasks):
        return f"{subject} is {'already' if pause else 'not'} paused; nothing written"
    who = f"by {by}: {reason}"
    if pause:
        task = await job.task(task_id)
        if task.status in TERMINAL:
            raise OperatorRefused(
                f"{subject} has ended ({task.status} at attempt {task.attempt}): "
                "nothing to pause; `crawlog retry` runs it again"
            )
        event = TaskPaused(actor=by, task_id=task_id, reason=reason)
        await apply_control(job.client, job.keys, event, task_site=task.site)
        return f"{_verb(pause)} {subject} ({task.url}) {who}"
    if (uncertain := await uncertain_action(job.client, job.keys, task_id)) is not None:
        # Resumed as it is, it would only be paused again at the same action.
        raise OperatorRefused(
            f"{subject} waits for a decision about its action {uncertain[1]} (its "
            "intent is logged, its completion not): `crawlog resolve --job "
            f"{job.keys.job} --task {task_id} --done|--redo --reason ...`"
        )
    moved = await apply_control(
        job.client, job.keys, TaskResumed(actor=by, task_id=task_id, reason=reason)
    )
    return f"{_verb(pause)} {subject} {who}; {moved} parked task(s) back in the queue"
