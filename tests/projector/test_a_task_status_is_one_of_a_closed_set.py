"""A task's status is one of a closed set (`TaskStatus`): every status the fold knows, and
a state naming another does not decode."""

from __future__ import annotations

from typing import get_args

import msgspec
import pytest

from projector._state import STATUSES, TERMINAL, TaskState, TaskStatus


def test_the_statuses_are_exactly_the_task_status_type() -> None:
    assert set(get_args(TaskStatus)) == set(STATUSES)
    assert set(STATUSES) > TERMINAL


def test_a_task_state_with_an_unknown_status_does_not_decode() -> None:
    known = msgspec.json.encode(TaskState(task_id="t", url="http://a.test/", site="a"))
    assert msgspec.json.decode(known, type=TaskState).status == "pending"
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(known.replace(b'"pending"', b'"lost"'), type=TaskState)
