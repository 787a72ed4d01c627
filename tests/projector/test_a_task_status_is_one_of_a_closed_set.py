"""A task's status is one of a closed set (`TaskStatus`): every status the fold knows."""

from __future__ import annotations

from typing import get_args

from projector._state import STATUSES, TERMINAL, TaskStatus


def test_the_statuses_are_exactly_the_task_status_type() -> None:
    assert set(get_args(TaskStatus)) == set(STATUSES)
    assert len(STATUSES) == len(set(STATUSES))
    assert set(STATUSES) > TERMINAL
