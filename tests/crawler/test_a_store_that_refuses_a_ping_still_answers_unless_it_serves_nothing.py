"""The offline ride takes a store for down only when it serves nothing: a server that
refuses a PING because it cannot save or is out of memory answers, and the write that
fails says why (once, with what to do); one loading its data or held by a script does not."""

from __future__ import annotations

import pytest

from crawler._offline import refusal_answers


@pytest.mark.parametrize(
    "error",
    [
        "MISCONF Errors writing to the AOF file: No space left on device",
        "OOM command not allowed when used memory > 'maxmemory'.",
    ],
)
def test_a_server_that_refuses_writes_answers(error: str) -> None:
    assert refusal_answers(error)


@pytest.mark.parametrize(
    "error",
    [
        "LOADING Valkey is loading the dataset in memory",
        "BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
        "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
    ],
)
def test_a_server_that_serves_nothing_does_not_answer(error: str) -> None:
    assert not refusal_answers(error)
