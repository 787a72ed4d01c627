"""Identifiers minted by producers."""

from __future__ import annotations

import uuid_utils


def new_event_id() -> str:
    """A fresh, time-ordered event id (UUIDv7), minted *before* the first append attempt.

    Minting before the first attempt is what makes appends idempotent: a retry carries the
    same id, and the log skips an id it has already seen.
    """
    return str(uuid_utils.uuid7())
