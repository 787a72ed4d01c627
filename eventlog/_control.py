"""Pauses and open circuits: events in the log, and flags every worker polls.

An operator's pause is an event (who, why) like everything else, but workers must see it
within a second without reading the whole log. So the same script that appends the event
sets a flag in one small hash, `JobKeys.control`, which workers read every
``CONTROL_POLL_S``. Resuming a site or a task also moves its parked tasks back to their
lanes, in that same script.
"""

from __future__ import annotations

from typing import Literal

import msgspec
import redis.asyncio as aioredis

from eventlog._codec import encode
from eventlog._connection import redis_errors
from eventlog._events import (
    CircuitClosed,
    CircuitOpened,
    JobPaused,
    JobResumed,
    SitePaused,
    SiteResumed,
    TaskPaused,
    TaskResumed,
)
from eventlog._keys import (
    CIRCUIT_PREFIX,
    JOB_PAUSED,
    SITE_PREFIX,
    TASK_PREFIX,
    JobKeys,
    circuit_flag,
    parked_prefix,
    site_pause_flag,
    task_pause_flag,
)
from eventlog._log import EventLog
from eventlog._scripts import CONTROL

CONTROL_POLL_S = 0.5
"""How often workers read the flags: a pause is seen within this (and one page)."""

_JOB, _SITE, _TASK, _CIRCUIT = JOB_PAUSED, SITE_PREFIX, TASK_PREFIX, CIRCUIT_PREFIX

ControlEvent = (
    JobPaused
    | JobResumed
    | SitePaused
    | SiteResumed
    | TaskPaused
    | TaskResumed
    | CircuitOpened
    | CircuitClosed
)
PauseReason = Literal["job paused", "site paused", "task paused"]
"""Why a task may not run now (`Controls.blocks`)."""


class Controls(msgspec.Struct, frozen=True, kw_only=True):
    """What workers must respect right now."""

    job_paused: bool = False
    paused_sites: frozenset[str] = frozenset()
    paused_tasks: frozenset[str] = frozenset()
    open_circuits: dict[str, float] = msgspec.field(default_factory=dict)
    """Site -> wall-clock time until which its circuit stays open."""

    def blocks(self, site: str, task_id: str) -> PauseReason | None:
        """Why a task may not run now (a pause), or None."""
        if self.job_paused:
            return "job paused"
        if site in self.paused_sites:
            return "site paused"
        if task_id in self.paused_tasks:
            return "task paused"
        return None


async def read_controls(redis: aioredis.Redis, keys: JobKeys) -> Controls:
    """The job's current flags, in one round trip."""
    with redis_errors("reading pause flags"):
        raw = await redis.hgetall(keys.control)
    sites, tasks, circuits = set(), set(), {}
    job_paused = False
    for field, value in raw.items():
        name = field.decode() if isinstance(field, bytes) else str(field)
        if name == _JOB:
            job_paused = True
        elif name.startswith(_SITE):
            sites.add(name.removeprefix(_SITE))
        elif name.startswith(_TASK):
            tasks.add(name.removeprefix(_TASK))
        elif name.startswith(_CIRCUIT):
            circuits[name.removeprefix(_CIRCUIT)] = float(value)
    return Controls(
        job_paused=job_paused,
        paused_sites=frozenset(sites),
        paused_tasks=frozenset(tasks),
        open_circuits=circuits,
    )


async def apply_control(
    redis: aioredis.Redis, keys: JobKeys, event: ControlEvent, *, task_site: str = ""
) -> int:
    """Append a pause/resume/circuit event and set its flag atomically.

    Resuming a site moves its parked tasks back to their lanes; resuming a task moves
    that task back (``task_site``: its site, where it is parked). Returns tasks moved.
    """
    unpark = ""
    match event:
        case JobPaused():
            field, value = _JOB, "paused"
        case JobResumed():
            field, value = _JOB, ""
        case SitePaused():
            field, value = site_pause_flag(event.site), "paused"
        case SiteResumed():
            field, value, unpark = site_pause_flag(event.site), "", parked_prefix(event.site)
        case TaskPaused():
            field, value = task_pause_flag(event.task_id), task_site or "?"
        case TaskResumed():
            field, value = task_pause_flag(event.task_id), ""
            if not task_site:  # the pause recorded where the task is parked
                with redis_errors("reading a pause flag"):
                    recorded = await redis.hget(keys.control, field)
                task_site = recorded.decode() if isinstance(recorded, bytes) else ""
            unpark = parked_prefix(task_site, event.task_id)
        case CircuitOpened():
            field, value = circuit_flag(event.site), repr(event.at + event.cooldown_s)
        case CircuitClosed():
            field, value = circuit_flag(event.site), ""
    log = EventLog(redis, keys)
    dedup, ttl = log.dedup_args()
    script = redis.register_script(CONTROL)
    keys_ = [keys.events, *dedup, keys.control, keys.parked, *keys.lanes]
    args: list[str | bytes | int] = [ttl, event.event_id, encode(event), field, value, unpark]
    with redis_errors("recording a pause or resume"):
        return int(await script(keys=keys_, args=args))
