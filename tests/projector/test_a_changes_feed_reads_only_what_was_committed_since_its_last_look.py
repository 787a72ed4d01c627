"""The feed of item changes (``export --follow --changes``) folds the archive once: each
look reads only the entries committed since the last (`ItemChangeFold.entries_read` is the
archive's size however many looks), a look with nothing new reads nothing, and what it
writes is what the whole log's fold (`item_changes`) lists, each change once. A feed started
again on its output (after a kill) reads the archive once more and writes nothing twice. An
archive put back to an earlier end (``crawlog restore``) is folded anew, not on from where
the fold was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eventlog import (
    START,
    EventLog,
    connect,
    stream_id_key,
)
from projector import CHANGES_FED, Feed, Projector, Store, item_changes, log_entries
from projector._item_changes import ItemChangeFold
from tests.projector.recrawl_logs import visit as _visit

pytestmark = pytest.mark.anyio

FIRST = [e for n in range(20) for e in _visit(1, f"/p{n}", {f"k{n}": n, f"x{n}": n})]
SECOND = [
    *_visit(2, "/p0", {"k0": 100}, "changed"),  # k0 changed, x0 removed
    *_visit(2, "/p1", {}, "gone", status=404),  # k1, x1 removed
    *_visit(2, "/p2", {}, "unchanged", status=304),
    *_visit(2, "/new", {"n": 1}, "new"),
]


def _lines(out: Path) -> list[tuple[str, str, int]]:
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return [(row["key"], row["change"], row["run"]) for row in rows]


async def test_each_look_reads_only_the_new_part_and_writes_each_change_once(
    valkey_url: str, job: str, data_dir: Path, tmp_path: Path
) -> None:
    store, out = Store(data_dir, job), tmp_path / "changes.jsonl"
    feed = Feed(store, what=CHANGES_FED, fmt="jsonl", out=out)
    feed.open()
    async with connect(valkey_url) as client, Projector(client, job, data_dir) as projector:
        log = EventLog(client, job)
        await log.append_many(FIRST)
        await projector.catch_up()
        assert feed.poll() == 40
        assert feed.folded.entries_read == len(FIRST) == store.read_manifest().events
        assert feed.poll() == 0
        assert feed.folded.entries_read == len(FIRST)  # nothing new: nothing read
        await log.append_many(SECOND)
        await projector.catch_up()
        assert feed.poll() == 5
        # Each archived entry read once over the three looks, not the first run's again.
        assert feed.folded.entries_read == len(FIRST) + len(SECOND)
        assert store.read_manifest().events == len(FIRST) + len(SECOND)
        whole = item_changes(await log_entries(client, store))
    assert _lines(out) == [(c.key, c.change, c.run) for c in whole]
    assert _lines(out)[40:] == [
        ("k0", "changed", 2),
        ("x0", "removed", 2),
        ("k1", "removed", 2),
        ("x1", "removed", 2),
        ("n", "added", 2),
    ]
    written = out.read_bytes()
    again = Feed(store, what=CHANGES_FED, fmt="jsonl", out=out)
    again.open()
    assert again.poll() == 0
    assert again.folded.entries_read == len(FIRST) + len(SECOND)
    assert out.read_bytes() == written


async def test_an_archive_put_back_to_an_earlier_end_is_folded_anew(
    valkey_url: str, job: str, data_dir: Path
) -> None:
    store = Store(data_dir, job)
    fold = ItemChangeFold()
    async with connect(valkey_url) as client, Projector(client, job, data_dir) as projector:
        log = EventLog(client, job)
        await log.append_many(FIRST)
        await projector.catch_up()
        earlier = store.read_manifest()
        await log.append_many(SECOND)
        await projector.catch_up()
    fold.advance(store, store.read_manifest())
    assert len(fold.take_after(START)) == 45
    # A restore puts back an archive that ends earlier: what the fold had is not kept.
    fold.advance(store, earlier)
    assert stream_id_key(fold.position) <= stream_id_key(earlier.position)
    assert [(c.key, c.change) for c in fold.take_after(START)][-1] == ("x19", "added")
    assert fold.entries_read == 2 * len(FIRST) + len(SECOND)
