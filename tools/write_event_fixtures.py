"""Write one encoded example of every event type to tests/fixtures/events/.

The files are kept forever: tests decode them after every change, so an event type whose
change would break old logs fails CI. Run this only to add fixtures for a new event type
or a new schema version; existing files are never overwritten.

    python tools/write_event_fixtures.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import msgspec

from eventlog import EVENT_TYPES, SCHEMA_VERSION, Counts, Cursor, Event, encode, tag_of

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "events"
COMMON = {"event_id": "01900000-0000-7000-8000-000000000001", "actor": "worker-1", "at": 1.7e9}

# Values for fields by name; every event type draws the fields it has.
VALUES: dict[str, Any] = {
    "task_id": "5f1c0a9e2b7d4c31",
    "site": "http://127.0.0.1:8000",
    "url": "http://127.0.0.1:8000/docs/page-7.html",
    "depth": 2,
    "priority": 1,
    "parent_task_id": "0a1b2c3d4e5f6071",
    "attempt": 2,
    "deliveries": 3,
    "previous_owner": "worker-0",
    "reason": "example reason",
    "cursor": Cursor(page=4, url="http://127.0.0.1:8000/list?page=5", last_item_key="item-40"),
    "counts": Counts(pages=4, items=40, bytes=40960),
    "status": 200,
    "bytes": 10240,
    "elapsed_ms": 12.5,
    "page": 4,
    "error": "ReadTimeout",
    "key": "item-41",
    "data": {"title": "Page 7", "n": 7},
    "delay_s": 1.5,
    "last_error": "ConnectError",
    "owners": ("worker-0", "worker-1"),
    "failures": 5,
    "cooldown_s": 30.0,
    "action_id": "send-report-2026-11",
    "result": "sent",
    "decision": "done",
    "entry_id": "1700000000000-0",
    "step": "ckpt",
    "events": 2,
    "owner": "worker-2",
}


def example(event_type: type[Event]) -> Event:
    values: dict[str, Any] = {}
    for field in msgspec.structs.fields(event_type):
        value = COMMON[field.name] if field.name in COMMON else VALUES[field.name]
        # A field of a closed set (a ``TaskReleased`` reason) takes the set's first value.
        if get_origin(field.type) is Literal and value not in get_args(field.type):
            value = get_args(field.type)[0]
        values[field.name] = value
    return event_type(**values)


def main() -> int:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for event_type in EVENT_TYPES:
        stem = f"{tag_of(event_type)}.v{SCHEMA_VERSION}"
        payload, expected = FIXTURES / f"{stem}.msgpack", FIXTURES / f"{stem}.json"
        if payload.exists():
            continue
        event = example(event_type)
        payload.write_bytes(encode(event))
        builtins = msgspec.to_builtins(event)
        expected.write_text(json.dumps(builtins, indent=2, sort_keys=True) + "\n")
        print(f"wrote {stem}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
