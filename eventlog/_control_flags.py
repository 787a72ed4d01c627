"""Field names of the control hash (``crawlog:{job}:control``), shared by its writers and
by the park script, which must only park while a pause flag is set."""

from __future__ import annotations

JOB_PAUSED = "job"
SITE_PREFIX = "site|"
TASK_PREFIX = "task|"
CIRCUIT_PREFIX = "circuit|"


def site_pause_flag(site: str) -> str:
    """The control field set while ``site`` is paused."""
    return SITE_PREFIX + site


def task_pause_flag(task_id: str) -> str:
    """The control field set while task ``task_id`` is paused (its value: the task's site)."""
    return TASK_PREFIX + task_id
