"""Events survive the wire: every type, every field, and the envelope's version rules."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given

from eventlog import (
    EVENT_TYPES,
    SCHEMA_VERSION,
    AnyEvent,
    CheckpointSaved,
    Cursor,
    EventDecodeError,
    TaskDone,
    decode,
    encode,
    tag_of,
    upcast,
)
from tests.eventlog.strategies import events


@given(events)
def test_every_event_decodes_to_itself(event: AnyEvent) -> None:
    assert decode(encode(event)) == event


def test_tags_are_unique_and_namespaced() -> None:
    tags = [tag_of(t) for t in EVENT_TYPES]
    assert len(set(tags)) == len(tags)
    assert all(tag.split(".")[0] in {"task", "site", "job", "action"} for tag in tags)


def test_events_are_frozen() -> None:
    event = TaskDone(actor="w1", task_id="t1", attempt=1)
    with pytest.raises(AttributeError):
        event.attempt = 2  # type: ignore[misc]


def test_each_event_gets_a_fresh_time_ordered_id() -> None:
    ids = [TaskDone(actor="w", task_id="t", attempt=1).event_id for _ in range(100)]
    assert len(set(ids)) == 100
    assert ids == sorted(ids)


def test_envelope_carries_schema_version_and_tag() -> None:
    version, body = msgspec.msgpack.decode(encode(TaskDone(actor="w", task_id="t", attempt=1)))
    assert version == SCHEMA_VERSION
    assert body["type"] == "task.done"


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\xc1",
        msgspec.msgpack.encode("not an envelope"),
        msgspec.msgpack.encode([SCHEMA_VERSION, {"type": "task.no_such_tag", "actor": "w"}]),
        msgspec.msgpack.encode([SCHEMA_VERSION, {"type": "task.done", "actor": "w"}]),
    ],
    ids=["empty", "invalid-msgpack", "not-an-envelope", "unknown-tag", "missing-field"],
)
def test_bytes_that_are_not_an_event_raise_event_decode_error(payload: bytes) -> None:
    with pytest.raises(EventDecodeError):
        decode(payload)


def test_a_newer_schema_version_asks_for_an_upgrade() -> None:
    payload = msgspec.msgpack.encode([SCHEMA_VERSION + 1, {"type": "task.done"}])
    with pytest.raises(EventDecodeError, match="upgrade crawlog"):
        decode(payload)


def test_older_versions_pass_through_upcasters_in_order() -> None:
    # A made-up history: v0 called the cursor's page "pageno", v-1 had no cursor at all.
    def v_minus_1_to_0(event: dict[str, Any]) -> dict[str, Any]:
        return {**event, "cursor": {"pageno": 0}}

    def v0_to_1(event: dict[str, Any]) -> dict[str, Any]:
        cursor = dict(event["cursor"])
        cursor["page"] = cursor.pop("pageno")
        return {**event, "cursor": cursor}

    upcasters = {SCHEMA_VERSION - 2: v_minus_1_to_0, SCHEMA_VERSION - 1: v0_to_1}
    old = {"type": "task.checkpoint", "actor": "w", "task_id": "t", "attempt": 1}
    event = upcast(SCHEMA_VERSION - 2, old, upcasters)
    assert isinstance(event, CheckpointSaved)
    assert event.cursor == Cursor(page=0)


def test_an_old_version_without_an_upcaster_is_refused() -> None:
    with pytest.raises(EventDecodeError, match="no upcaster"):
        upcast(SCHEMA_VERSION - 1, {"type": "task.done"}, {})
