"""A script's reply is parsed once, at the boundary, into named and typed fields; a reply
of the wrong shape is an error there, not three calls later."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest

from eventlog._replies import (
    PendingEntry,
    dead_replay_reply,
    expired_reply,
    pending_entries,
    resolve_reply,
    settle_reply,
)


def test_a_pending_entry_has_named_fields_and_none_for_a_deleted_entry() -> None:
    reply = [[0, b"1-0", b"w1", 2, [b"t", b"task"]], [2, b"3-0", b"w2", 1, None]]
    live, deleted = pending_entries(reply)
    assert live == PendingEntry(0, b"1-0", b"w1", 2, [b"t", b"task"])
    assert deleted.fields is None and deleted.lane == 2


def test_expired_says_how_soon_the_next_lease_expires() -> None:
    reply = expired_reply([-1, [[1, b"2-0", b"w1", 3, [b"t", b"x"]]]])
    assert reply.soonest_ms == -1 and reply.entries[0].deliveries == 3


@pytest.mark.parametrize(
    ("raw", "status", "value"),
    [
        ([b"ok", b"5-0"], "ok", b"5-0"),
        ([b"ok", None], "ok", None),
        ([b"dup"], "dup", None),
        ([b"lost", b"w2"], "lost", b"w2"),
        ([b"lost", None], "lost", None),
        ([b"resumed"], "resumed", None),
    ],
)
def test_settle_is_a_status_and_its_value(raw: list[object], status: str, value: object) -> None:
    assert settle_reply(raw) == (status, value)


def test_resolve_and_dead_replay_name_their_outcome() -> None:
    assert resolve_reply([b"refused"]).status == "refused"
    assert resolve_reply([b"ok", 1]).requeued == 1
    assert dead_replay_reply([b"gone"]).entry_id is None
    assert dead_replay_reply([b"ok", b"7-0"]).entry_id == b"7-0"


@pytest.mark.parametrize(
    "bad",
    [
        lambda: settle_reply([b"maybe"]),
        lambda: pending_entries([[0, b"1-0", b"w1"]]),
        lambda: expired_reply([b"soon", []]),
    ],
)
def test_a_reply_of_another_shape_is_refused_at_once(bad: Callable[[], object]) -> None:
    with pytest.raises(msgspec.ValidationError):
        bad()
