"""A worker's local journal: every fenced write it sends, appended to its own disk first.

The journal is the nearest of the three tiers (DESIGN.md, "Tiers"): a write the store
acknowledged may still be lost with the store (a flush, a cut append-only file, a
failover), so a segment of the journal is deleted only once the projector has committed
every write in it, not when Valkey said OK. A restarted worker flushes what the journal
holds that the store never acknowledged (`TaskQueue.flush_journal`).

On disk: ``<directory>/<n>.journal`` segment files, numbered in order. Each record is
framed as ``length (u32) | crc32 of the payload (u32) | payload`` (little-endian), the
payload a msgpack `JournalRecord`. A record cut by a kill mid-write (a torn tail) fails
its length or its checksum: reading stops at the last whole record, and a journal opened
for writing cuts the torn bytes off before it appends.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

import anyio
import msgspec

from eventlog._exceptions import ConfigError, JournalFull
from eventlog._log import stream_id_key

JournalFsync = Literal["always", "never"]
"""When a journal record reaches the disk: ``always`` fsyncs each write's record before the
write is sent (it survives a power loss), one fsync for every record written meanwhile
(`Journal.sync`: concurrent tasks share it); ``never`` leaves it to the OS (it survives a
killed process, not a crashed machine)."""
JOURNAL_FSYNC_POLICIES: Final[tuple[JournalFsync, ...]] = ("always", "never")
DEFAULT_JOURNAL_FSYNC: Final[JournalFsync] = "always"
JOURNAL_FSYNC_ENV: Final = "CRAWLOG_JOURNAL_FSYNC"
"""The environment variable ``crawlog worker --fsync`` defaults to (a crawl's workers
inherit it from the crawl)."""
DEFAULT_SEGMENT_BYTES: Final = 4 * 1024 * 1024
"""A segment is closed past this size; a closed segment is deleted as a whole."""
SEGMENT_SUFFIX: Final = ".journal"
LOCK_FILE: Final = "lock"

_HEADER = struct.Struct("<II")
HEADER_BYTES: Final = _HEADER.size
MAX_RECORD_BYTES: Final = 256 * 1024 * 1024
"""A length above this is taken for garbage (a torn header), not a record."""

Outcome = Literal["applied", "present", "dup", "orphaned", "resumed", "lost"]
"""What became of a journalled write: ``applied`` by the store (OK), ``present`` in the
log already when a flush looked, ``dup`` refused as a repeat of one that went through,
``orphaned`` its lease was taken over (recorded as `TaskOrphaned`, never applied),
``resumed`` a park refused as the pause was lifted, ``lost`` refused as not the lease
holder's (the worker was told, `LeaseLost`)."""


_WENT_THROUGH: Final = frozenset({"applied", "present", "dup"})
"""Outcomes of a write the store had."""


class JournalSettle(msgspec.Struct, frozen=True, kw_only=True, tag="settle", gc=False):
    """One fenced write (`TaskQueue` settle call), as its script is called.

    ``args`` are the script's arguments after its dedup ttl (group, consumer, entry, mode,
    task id, payload, delay, action field and value, then event id, payload pairs);
    ``lane`` and ``target_lane`` name its first and fifth keys (the lease's lane, a requeue's
    lane); ``after`` is the highest stream ID the journal knew acknowledged when it was
    written: the write, if it reached the log, is after it."""

    seq: int
    lane: int
    target_lane: int
    args: list[Any]
    """``str | bytes | int`` each (msgpack keeps them apart; msgspec's union cannot)."""
    after: str = "0-0"
    epoch: int = 0
    """The job's epoch the lease was held in (0: not checked, a job begun before
    identities): a write of an older epoch than the store's is one of before a restore."""
    enqueued: list[list[Any]] = msgspec.field(default_factory=list)
    """The `ENQUEUE` calls of the links the task's pages found since its last write, each
    its arguments after the dedup ttl: enqueued again (deduplicated by ``seen``) when the
    write is given back after a restore, whose store may have lost them with it."""

    @property
    def consumer(self) -> str:
        return str(self.args[1])

    @property
    def entry_id(self) -> str:
        return str(self.args[2])

    @property
    def mode(self) -> str:
        return str(self.args[3])

    @property
    def task_id(self) -> str:
        return str(self.args[4])

    @property
    def event_ids(self) -> list[str]:
        return [str(event_id) for event_id in self.args[9::2]]

    @property
    def payloads(self) -> list[bytes]:
        return [bytes(payload) for payload in self.args[10::2]]


class JournalAck(msgspec.Struct, frozen=True, kw_only=True, tag="ack", gc=False):
    """What became of the write ``seq``, and the stream ID up to which the log has it (""
    if nothing of it is in the log): its segment goes once the projector committed that."""

    seq: int
    outcome: Outcome
    stream_id: str = ""
    epoch: int = 0
    """The job's epoch of the store that answered (0: not known)."""


JournalRecord: TypeAlias = JournalSettle | JournalAck

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(JournalRecord)


# --- framing (pure) ----------------------------------------------------------------------


def frame(payload: bytes) -> bytes:
    """``payload`` as one record: its length, its crc32, itself."""
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def read_frames(data: bytes) -> tuple[list[bytes], int]:
    """The payloads of the whole records at the start of ``data``, and how many bytes they
    take: a torn or damaged record, and everything after it, is not read."""
    payloads: list[bytes] = []
    at, end = 0, len(data)
    while end - at >= HEADER_BYTES:
        length, crc = _HEADER.unpack_from(data, at)
        start = at + HEADER_BYTES
        if length > MAX_RECORD_BYTES or end - start < length:
            break
        payload = data[start : start + length]
        if zlib.crc32(payload) != crc:
            break
        payloads.append(payload)
        at = start + length
    return payloads, at


def encode_record(record: JournalRecord) -> bytes:
    return frame(_encoder.encode(record))


def decode_records(data: bytes) -> tuple[list[JournalRecord], int]:
    """`read_frames`, decoded: a whole record that does not decode ends the read too."""
    payloads, whole = read_frames(data)
    records: list[JournalRecord] = []
    at = 0
    for payload in payloads:
        try:
            records.append(_decoder.decode(payload))
        except msgspec.DecodeError:
            return records, at
        at += HEADER_BYTES + len(payload)
    return records, whole


def later(a: str, b: str) -> str:
    """The later of two stream IDs ("" for none)."""
    if not a:
        return b
    if not b:
        return a
    return a if stream_id_key(a) >= stream_id_key(b) else b


# --- the journal on disk -----------------------------------------------------------------


class _Segment:
    def __init__(self, number: int, path: Path) -> None:
        self.number = number
        self.path = path
        self.calls: set[int] = set()
        """Seqs of the writes journalled in this segment."""


class Journal:
    """One worker's journal of one job, in ``directory`` (created if missing).

    Opening reads every segment (a torn tail of the last is cut off) and keeps, in memory,
    the writes not acknowledged yet (`unsettled`) and what is needed to delete a segment.
    """

    def __init__(
        self,
        directory: Path,
        *,
        fsync: JournalFsync = DEFAULT_JOURNAL_FSYNC,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
    ) -> None:
        self.directory = directory
        self.fsync = fsync
        self.segment_bytes = segment_bytes
        self.deleted_segments = 0
        self._segments: list[_Segment] = []
        self._open: dict[int, JournalSettle] = {}
        """Writes journalled and not acknowledged, by seq."""
        self._bounds: dict[int, str] = {}
        """Acknowledged writes: the stream ID the log must be committed past."""
        self._acked = "0-0"
        self._next_seq = 1
        self._file: int | None = None
        self._size = 0
        self._lock = -1
        self._written = 0
        """Records written; `sync` makes sure the first ``_synced`` of them are on disk."""
        self._synced = 0
        self._syncing: anyio.Event | None = None
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._lock = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise JournalFull(directory, exc.strerror or str(exc)) from exc
        try:
            # One writer: another one's record being written is not a torn tail to cut.
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock)
            raise ConfigError(
                f"the journal {directory} is in use by another live process: a worker "
                "name runs once per job and data directory"
            ) from None
        try:
            self._load()
        except OSError as exc:
            self.close()
            raise JournalFull(directory, exc.strerror or str(exc)) from exc

    # -- reading -------------------------------------------------------------------------

    def _load(self) -> None:
        numbers = _segment_numbers(self.directory)
        for i, number in enumerate(numbers):
            segment = _Segment(number, self._path(number))
            data = segment.path.read_bytes()
            records, whole = decode_records(data)
            if whole < len(data) and i == len(numbers) - 1:
                # Killed mid-write: the torn record never went out (it is written first).
                os.truncate(segment.path, whole)
            for record in records:
                self._replay(segment, record)
            self._segments.append(segment)

    def _replay(self, segment: _Segment, record: JournalRecord) -> None:
        if isinstance(record, JournalSettle):
            self._open[record.seq] = record
            segment.calls.add(record.seq)
            self._next_seq = max(self._next_seq, record.seq + 1)
        else:
            self._open.pop(record.seq, None)
            self._bounds[record.seq] = record.stream_id
            self._acked = later(self._acked, record.stream_id)

    def advance(self, stream_id: str) -> None:
        """Note that the log holds ``stream_id`` already: a write journalled from now on,
        if it reaches the log, comes after it (a flush looks for it from there)."""
        self._acked = later(self._acked, stream_id)

    def unsettled(self) -> list[JournalSettle]:
        """Writes journalled that no reply acknowledged, in the order they were written."""
        return [self._open[seq] for seq in sorted(self._open)]

    def lost_with_store(self, position: str, epoch: int) -> list[JournalSettle]:
        """The writes a store of an epoch before ``epoch`` acknowledged after ``position``
        (the committed position a restore went on from), in order: that store is gone, so
        they are in no log, unless the restore kept its tail; or, after a Sentinel
        promotion raised the epoch, the promoted replica may lack them. Read from disk
        (only after a restore or a promotion: the journal keeps no acknowledged write in
        memory)."""
        writes: dict[int, JournalSettle] = {}
        acks: dict[int, JournalAck] = {}
        for record in self.records():
            if isinstance(record, JournalSettle):
                writes[record.seq] = record
            else:
                acks[record.seq] = record
        limit = stream_id_key(position)
        return [
            writes[seq]
            for seq, ack in sorted(acks.items())
            if seq in writes
            and 0 < writes[seq].epoch < epoch
            and ack.epoch < epoch
            and ack.outcome in _WENT_THROUGH
            and (not ack.stream_id or stream_id_key(ack.stream_id) > limit)
        ]

    def records(self) -> Iterator[JournalRecord]:
        """Every whole record on disk, in order (for tests and ``crawlog`` to look at)."""
        for segment in self._segments:
            yield from decode_records(segment.path.read_bytes())[0]

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    # -- writing -------------------------------------------------------------------------

    def settle(
        self,
        lane: int,
        target_lane: int,
        args: list[str | bytes | int],
        *,
        epoch: int = 0,
        enqueued: list[list[Any]] | None = None,
    ) -> JournalSettle:
        """Journal a write about to be sent (``args`` as `JournalSettle` says)."""
        record = JournalSettle(
            seq=self._next_seq,
            lane=lane,
            target_lane=target_lane,
            args=args,
            after=self._acked,
            epoch=epoch,
            enqueued=enqueued or [],
        )
        self._next_seq += 1
        segment = self._write(encode_record(record))
        segment.calls.add(record.seq)
        self._open[record.seq] = record
        return record

    def ack(self, seq: int, outcome: Outcome, stream_id: str = "", *, epoch: int = 0) -> None:
        """Record what became of write ``seq`` (``epoch``: the store's that answered)."""
        ack = JournalAck(seq=seq, outcome=outcome, stream_id=stream_id, epoch=epoch)
        self._write(encode_record(ack))
        self._open.pop(seq, None)
        self._bounds[seq] = stream_id
        self._acked = later(self._acked, stream_id)

    def drop_committed(self, committed: str | None) -> int:
        """Delete each segment whose every write is acknowledged and committed by the
        projector up to ``committed`` (None: nothing committed yet); how many."""
        if committed is None:
            return 0
        limit = stream_id_key(committed)
        dropped = 0
        for segment in list(self._segments):
            if not self._committed(segment, limit):
                break  # in order: a later segment waits for an earlier one
            if segment is self._segments[-1] and self._file is not None:
                self._close()
            try:
                segment.path.unlink(missing_ok=True)
            except OSError as exc:
                raise JournalFull(segment.path, exc.strerror or str(exc)) from exc
            for seq in segment.calls:
                self._bounds.pop(seq, None)
            self._segments.remove(segment)
            dropped += 1
        self.deleted_segments += dropped
        return dropped

    def _committed(self, segment: _Segment, limit: tuple[int, int]) -> bool:
        for seq in segment.calls:
            if seq in self._open:
                return False
            bound = self._bounds.get(seq, "")
            if bound and stream_id_key(bound) > limit:
                return False
        return True

    def close(self) -> None:
        """Close the segment being written and let another process open the journal."""
        if self._file is not None:
            self._close()
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1

    def _close(self) -> None:
        assert self._file is not None
        os.close(self._file)
        self._file = None

    def _path(self, number: int) -> Path:
        return _segment_path(self.directory, number)

    def _write(self, data: bytes) -> _Segment:
        path = self.directory
        try:
            if self._file is None or self._size >= self.segment_bytes:
                if self._file is not None:
                    if self.fsync == "always":
                        os.fsync(self._file)  # every ``segment_bytes``: what it holds is synced
                        self._synced = self._written
                    self._close()
                number = self._segments[-1].number + 1 if self._segments else 1
                path = self._path(number)
                self._file = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                self._size = 0
                self._segments.append(_Segment(number, path))
            path = self._segments[-1].path
            written = os.write(self._file, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, "short write")
        except OSError as exc:
            if self._file is not None:
                # A part-written record must not stay in front of the next ones.
                with contextlib.suppress(OSError):  # a reader stops at a torn record anyway
                    os.ftruncate(self._file, self._size)
            raise JournalFull(path, exc.strerror or str(exc)) from exc
        self._size += len(data)
        self._written += 1
        return self._segments[-1]

    async def sync(self) -> None:
        """Return once every record written so far is on disk (``fsync="always"``; at once
        for ``never``). The fsync runs in a thread, and one covers every record written
        before it started: tasks that wrote meanwhile wait for that one, or the next."""
        if self.fsync == "never":
            return
        target = self._written
        while self._synced < target:
            if self._syncing is not None:
                await self._syncing.wait()
                continue
            if self._file is None:
                return  # closed by a rotation, which synced it
            self._syncing = syncing = anyio.Event()
            upto, path = self._written, self._segments[-1].path
            try:
                # A copy of the descriptor: a rotation may close the journal's meanwhile.
                copy = os.dup(self._file)
                await anyio.to_thread.run_sync(_fsync_and_close, copy)
            except OSError as exc:
                raise JournalFull(path, exc.strerror or str(exc)) from exc
            finally:
                self._syncing = None
                syncing.set()
            self._synced = max(self._synced, upto)


def _segment_numbers(directory: Path) -> list[int]:
    """The numbers of the segment files in ``directory``, in order."""
    return sorted(
        int(path.name.removesuffix(SEGMENT_SUFFIX))
        for path in directory.glob(f"*{SEGMENT_SUFFIX}")
        # A regular file: what is not one (a device in its place) is not read.
        if path.name.removesuffix(SEGMENT_SUFFIX).isdigit() and path.is_file()
    )


def _segment_path(directory: Path, number: int) -> Path:
    return directory / f"{number:08d}{SEGMENT_SUFFIX}"


def read_journal(directory: Path) -> list[JournalRecord]:
    """Every whole record of the journal in ``directory``, in order, read without opening
    it: a live worker's too (its lock is not taken, nothing is cut; a record being written
    is left out as a torn tail is). For a tool that compares what a worker was told was
    written with a log."""
    records: list[JournalRecord] = []
    for number in _segment_numbers(directory):
        try:
            data = _segment_path(directory, number).read_bytes()
        except FileNotFoundError:
            continue  # deleted meanwhile: the projector committed past it
        records += decode_records(data)[0]
    return records


def acknowledged_writes(records: Iterable[JournalRecord]) -> list[JournalSettle]:
    """The writes among ``records`` whose reply said the store had them (``applied``,
    ``present`` or ``dup``), in the order they were written: what the worker was told
    went through."""
    writes: dict[int, JournalSettle] = {}
    through: set[int] = set()
    for record in records:
        if isinstance(record, JournalSettle):
            writes[record.seq] = record
        elif record.outcome in _WENT_THROUGH:
            through.add(record.seq)
    return [writes[seq] for seq in sorted(through & writes.keys())]


def _fsync_and_close(fd: int) -> None:
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def journal_directory(data_dir: Path, worker: str, job: str) -> Path:
    """Where worker ``worker`` journals its writes to ``job``: under
    ``<data dir>/workers/<worker>/journal``, one directory per job."""
    return data_dir / "workers" / worker / "journal" / job
