"""The item-key store: the keys of items scraped before the last snapshot, out of memory.

The fold counts each item key once (``State.item_keys``): a redone page scrapes the same
keys again. Holding every key of the job in memory, and encoding them all into every
snapshot, made the projector's memory and its cost per event grow with the job. Now, at
each snapshot, the keys scraped since the previous one leave memory for a key segment
(``keys/keys-<position>.parquet``: one ``key`` column, sorted, written temp + fsync +
rename and named by the manifest, as task segments are), and the snapshot holds none.
The keys a manifest commits are its snapshot's, then those of its key segments; a key is
written once (a key brought back is not written again), so segments never overlap.

The fold stays pure: before a batch is folded, the projector asks which of the item keys
it names are stored (a compact set of their hashes, then a read of the segments for those
that match, so a hash collision costs a read, never a wrong count) and puts those into
``state.item_keys`` for the fold to find.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Collection, Iterable, Iterator, Sequence
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Final

import msgspec

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
else:
    from projector._arrow import pa, pq

from eventlog import CrawlogError, ItemScraped, LogEntry, stream_id_key
from projector._arrow import SMALL_TABLE_ROWS
from projector._hashset import HashSet64
from projector._taskstore import COMPRESSION, read_store_file, write_store_file

KEYS_DIR: Final = "keys"
KEY_SEGMENT_SUFFIX: Final = ".parquet"
KEY_ROW_GROUP: Final = 4_096
"""Rows a row group: a segment is sorted, so a lookup reads the one row group (per sorted
part) whose key range holds the key, found from the row groups' statistics."""


@functools.cache
def _key_schema() -> pa.Schema:
    """The column of a key segment (a function: Arrow is imported at its first use)."""
    return pa.schema([("key", pa.string())])


class KeySegmentInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One committed key segment: its file and how many keys it holds."""

    name: str
    keys: int
    position: str
    """The snapshot position its keys are the keys scraped up to (the newest, once merged)."""


def _name(position: str, suffix: str = "") -> str:
    ms, seq = stream_id_key(position)
    return f"keys-{ms:015d}-{seq:08d}{suffix}{KEY_SEGMENT_SUFFIX}"


def write_key_segment(directory: Path, keys: Iterable[str], position: str) -> KeySegmentInfo:
    """Write ``keys`` (each once, none stored yet) sorted as a new key segment (not
    committed)."""
    # Sorted by Arrow: cheaper than Python's sort of as many strings, unless they are few.
    listed = list(keys)
    small = len(listed) <= SMALL_TABLE_ROWS
    table = pa.table(
        {"key": pa.array(sorted(listed) if small else listed, pa.string())}, schema=_key_schema()
    )
    if not small:
        table = table.sort_by("key")
    name = _name(position)
    write_store_file(directory, name, table, row_group_size=KEY_ROW_GROUP)
    return KeySegmentInfo(name=name, keys=table.num_rows, position=position)


def _read(path: Path, filters: object = None) -> pa.Table:
    return read_store_file(path, "key", ["key"], filters)


def merge_key_segments(directory: Path, segments: Sequence[KeySegmentInfo]) -> KeySegmentInfo:
    """The segments as one, named after the newest (not committed).

    Copied a row group at a time, so a merge holds one row group, whatever the job's size:
    each segment's part stays sorted, its row groups' key ranges apart, so a lookup still
    reads one row group per part (the segments never share a key: nothing is dropped).
    Sorting the whole would hold every key of the merge in memory at once.
    """
    last = segments[-1]
    first = segments[0].name[len("keys-") :][:24]  # its position: names stay short
    name = _name(last.position, f"-m{len(segments)}-{first}")
    tmp = directory / f".{name}.{os.getpid()}.tmp"
    keys = 0
    with open(tmp, "wb") as sink:
        with pq.ParquetWriter(
            sink, _key_schema(), compression=COMPRESSION, write_page_checksum=True
        ) as writer:
            for info in segments:
                path = directory / info.name
                try:
                    parquet = pq.ParquetFile(path)
                    for group in range(parquet.num_row_groups):
                        table = parquet.read_row_group(group, columns=["key"])
                        keys += table.num_rows
                        writer.write_table(table, row_group_size=KEY_ROW_GROUP)
                except (OSError, pa.ArrowException) as exc:
                    raise CrawlogError(f"key segment {path} cannot be read ({exc})") from None
        sink.flush()
        os.fsync(sink.fileno())
    os.replace(tmp, directory / name)
    return KeySegmentInfo(name=name, keys=keys, position=last.position)


def read_keys(paths: Sequence[Path], keys: Collection[str] | None = None) -> set[str]:
    """The keys the segments at ``paths`` hold: all, or those of ``keys``."""
    wanted = None if keys is None else list(keys)
    if wanted is not None and not wanted:
        return set()
    found: set[str] = set()
    for path in paths:
        table = _read(path, None if wanted is None else [("key", "in", wanted)])
        found.update(table.column("key").to_pylist())
    return found


def iter_key_chunks(paths: Iterable[Path]) -> Iterator[list[str]]:
    """Every stored key, a batch at a time (memory bounded by one)."""
    for path in paths:
        try:
            for chunk in pq.ParquetFile(path).iter_batches(KEY_ROW_GROUP, columns=["key"]):
                yield chunk.column(0).to_pylist()
        except (OSError, pa.ArrowException) as exc:
            raise CrawlogError(f"key segment {path} cannot be read ({exc})") from None


def named_keys(entries: Iterable[LogEntry]) -> set[str]:
    """The item keys ``entries`` scrape."""
    return {e.event.key for e in entries if type(e.event) is ItemScraped}


class StoredKeys:
    """What the projector knows of the item keys that left its memory.

    ``hashes`` holds the ``hash`` of every stored key (8 bytes each, ``HashSet64``): a key
    a batch scrapes that is neither in memory nor in it is new (almost every one is), found
    without I/O. The hashes are this process's own (Python's string hash is salted per
    process), rebuilt from the segments when the projector starts. ``in_flight`` holds the
    keys of a commit not landed yet; ``brought`` the stored keys brought back into the
    state's ``item_keys`` since the last snapshot, which are not written again.
    """

    def __init__(self) -> None:
        self.hashes = HashSet64()
        self.in_flight: frozenset[str] = frozenset()
        self.brought: set[str] = set()

    def rebuild(self, paths: Sequence[Path]) -> None:
        """The hashes of every key the segments at ``paths`` hold."""
        hashes = HashSet64()
        # One update: the empty set is filled at once (``HashSet64.update``), not a hash at
        # a time after the first batch.
        hashes.update(map(hash, chain.from_iterable(iter_key_chunks(paths))))
        self.hashes = hashes

    def evict(self, item_keys: set[str]) -> list[str]:
        """The keys of ``item_keys`` not stored yet, noted as in flight (the commit that
        writes them is starting); ``item_keys`` is emptied."""
        brought = self.brought
        leaving = [key for key in item_keys if key not in brought] if brought else list(item_keys)
        item_keys.clear()
        brought.clear()
        self.in_flight = frozenset(leaving)
        self.hashes.update(map(hash, leaving))
        return leaving

    def landed(self) -> None:
        """The commit of the ``in_flight`` keys is in the store now."""
        self.in_flight = frozenset()

    def missing(self, item_keys: Collection[str], keys: Iterable[str]) -> list[str]:
        """Those of ``keys`` not in ``item_keys`` (memory) that may be stored."""
        if not len(self.hashes):
            return []
        return self.hashes.matching([k for k in keys if k not in item_keys])

    def load(self, keys: Collection[str], paths: Sequence[Path]) -> set[str]:
        """Those of ``keys`` the store holds, noted as brought back."""
        found = {k for k in keys if k in self.in_flight}
        rest = [k for k in keys if k not in found]
        if rest:
            found |= read_keys(paths, rest)
        self.brought |= found
        return found
