"""Recorded payloads of every event type decode forever."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from eventlog import EVENT_TYPES, SCHEMA_VERSION, decode, tag_of

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "events"
PAYLOADS = sorted(FIXTURES.glob("*.msgpack"))


def test_every_current_event_type_has_a_recorded_payload() -> None:
    recorded = {p.name for p in PAYLOADS}
    missing = [
        tag_of(t) for t in EVENT_TYPES if f"{tag_of(t)}.v{SCHEMA_VERSION}.msgpack" not in recorded
    ]
    assert not missing, f"run tools/write_event_fixtures.py to record: {missing}"


@pytest.mark.parametrize("payload", PAYLOADS, ids=[p.stem for p in PAYLOADS])
def test_recorded_payload_still_decodes_to_what_was_recorded(payload: Path) -> None:
    event = decode(payload.read_bytes())
    expected = json.loads(payload.with_name(payload.stem + ".json").read_text())
    assert tag_of(type(event)) == payload.name.split(".v")[0]
    # Fields added since the recording have defaults; everything recorded must be intact.
    decoded = json.loads(msgspec.json.encode(event))
    assert recorded_fields_of(decoded, expected) == expected


def recorded_fields_of(decoded: object, recorded: object) -> object:
    """``decoded`` cut down to what was recorded (fields added since have defaults)."""
    if isinstance(decoded, dict) and isinstance(recorded, dict):
        return {k: recorded_fields_of(decoded.get(k), v) for k, v in recorded.items()}
    return decoded
