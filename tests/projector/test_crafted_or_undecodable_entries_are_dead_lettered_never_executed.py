"""Entries that are not crawlog events — garbage, a pickle built to run code when loaded,
msgpack extension types, an expression for an eval — are dead-lettered by the projector,
which goes on folding the good events around them; none of them is ever executed."""

from __future__ import annotations

import pickle
import re
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
import redis.asyncio as aioredis

from eventlog import EventLog
from projector._projector import Projector
from projector._replay import replay
from projector._store import Store
from tests.projector.test_projector import task_events

pytestmark = pytest.mark.anyio


class Exploit:
    """Unpickling this touches the marker file: the proof that something unpickled it."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (Path.touch, (self.marker,))


async def test_crafted_entries_are_dead_lettered_and_the_good_ones_folded(
    log: EventLog,
    redis_client: aioredis.Redis,
    make_projector: Callable[..., Projector],
    data_dir: Path,
    job: str,
    tmp_path: Path,
) -> None:
    marker = tmp_path / "executed"
    evil = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    crafted = [
        {"e": pickle.dumps(Exploit(marker))},
        {"e": b"\x80\x04garbage that is neither msgpack nor pickle"},
        {"e": msgspec.msgpack.encode([1, {"type": "eval", "code": evil}])},  # a tag nobody has
        {"e": msgspec.msgpack.encode([1, msgspec.msgpack.Ext(42, pickle.dumps(Exploit(marker)))])},
        {"e": msgspec.msgpack.encode(evil)},
        {"cmd": evil.encode()},  # not even the event field
    ]
    await log.append_many(task_events(1))
    for fields in crafted:
        await redis_client.xadd(log.keys.events, fields)  # type: ignore[arg-type]
    await log.append_many(task_events(2))

    async with make_projector() as projector:
        await projector.catch_up()
    assert projector.state.job.tasks["done"] == 2  # the events after the poison ones too
    letters = await log.dead_letters()
    assert len(letters) == len(crafted)
    assert {letter.stream for letter in letters} == {log.keys.events}
    assert all(letter.reason for letter in letters)
    # Replay skips them the same way, and still nothing ran.
    replayed = await replay(redis_client, Store(data_dir, job))
    assert replayed.job.tasks["done"] == 2
    assert not marker.exists()


def test_no_package_unpickles_evals_or_execs() -> None:
    """A guard: the code that reads the log and the archive has no way to run data."""
    root = Path(__file__).resolve().parents[2]
    forbidden = [
        re.compile(r"\b(import|from)\s+(pickle|_pickle|marshal|shelve|dill|jsonpickle)\b"),
        re.compile(r"(?<![\w.])(eval|exec|compile|__import__)\s*\("),
        re.compile(r"\byaml\.(unsafe_)?load\(|\bext_hook\b|\bos\.system\b"),
    ]
    found = [
        f"{path.relative_to(root)}:{n}: {line.strip()}"
        for package in ("eventlog", "projector", "crawler")
        for path in sorted((root / package).rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if any(pattern.search(line) for pattern in forbidden)
    ]
    assert found == []
