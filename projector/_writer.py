"""The segment writer: a child process that turns the log entries a projector read into segments.

The projector's main thread reads, decodes and folds every event in Python, under the GIL;
building a segment's Arrow table took as much again of the GIL in the commit thread, and
the two took turns on it. Here the projector only joins each batch's stream IDs and
stored payloads into two buffers and sends them through a pipe to this process, which
decodes the payloads again and builds the batch's columns; at a commit it writes the
segment of the batches (temp, fsync, rename) and answers with its ``SegmentInfo``. What
the GIL of the projector keeps of the archive is the join, under a tenth of a
microsecond an event.

Crash safety stays where it was: the commit point, the manifest, is written by the
projector, after this process has answered. A writer whose projector died can at most
leave a segment file no manifest names, which the next projector deletes
(``Store.recover``). It cannot outlive its projector for long, nor overlap with the next:

- the kernel kills it when the projector dies (``PR_SET_PDEATHSIG``, Linux), and it
  exits at the end of its input (the pipe closes with the projector) everywhere;
- it inherits the projector's lock (an flock, held while any process holds the file
  open), so a new projector of the job cannot start before it is gone;
- its temporary file names carry its pid.

The table is built from the decoded events' attributes, column by column, not through
JSON lines and Arrow's JSON reader (``_archive.to_table``): once the GIL does not matter,
that is the cheaper way in CPU, and the two cores are shared with Valkey and the main
thread. It is the same table: every event type is decoded into a *view* of it, a Struct
with the type's fields that make columns (same types, same defaults) plus, for each column
the type lacks, a field that can only be null (so a payload that carries such a key with a
value fails here and takes the exact route below instead of filling a column the event
type does not have). Anything the views cannot decode (an older schema version, a crafted
payload) goes through ``to_table``.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import functools
import math
import os
import signal
import struct
import subprocess
import sys
from collections.abc import Sequence
from contextlib import AsyncExitStack
from operator import attrgetter
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Final, Literal, Self, Union

import anyio
import anyio.to_thread
import msgspec
import pyarrow as pa
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from eventlog import (
    EVENT_TYPES,
    SCHEMA_VERSION,
    CheckpointSaved,
    CrawlogError,
    LogEntry,
    TaskAborted,
    decode,
    tag_of,
)
from projector._archive import SCHEMA, SegmentInfo, to_table, write_table

if TYPE_CHECKING:
    import pyarrow.compute as pc
else:
    # Only the writer process computes with Arrow: a projector that never starts one (a
    # short crawl's) does not pay for importing the compute functions.
    from projector._arrow import pc

WRITER_MIN_EVENTS: Final = 10_000
"""A projector starts its writer process once it has this many events to commit (or a
stream this long when it starts): one that keeps up with a slow crawl writes its small
segments in its commit thread and never pays for a process."""

_HEADER = struct.Struct("<BQQQ")
"""A message to the writer: its kind, its events, the byte sizes of the stream IDs and of
the payloads, which follow."""
_REPLY = struct.Struct("<Q")
_PR_SET_PDEATHSIG: Final = 1
_READY: Final = b"ready"
_ID_SEPARATOR: Final = "\n"


class WriterFailed(CrawlogError):
    """The segment writer process could not write a segment, or is gone."""


class _Reply(msgspec.Struct, frozen=True, kw_only=True):
    segment: SegmentInfo | None = None
    error: str | None = None


# --- the table ---------------------------------------------------------------------------

# Columns a view reads from another field of its event than the column's name.
_ALIASES: Final[dict[type, dict[str, property]]] = {
    CheckpointSaved: {
        "page": property(lambda self: self.cursor.page),
        "key": property(lambda self: self.cursor.last_item_key),
    },
    TaskAborted: {"error": property(lambda self: self.last_error)},
}
_SPECIAL: Final = ("stream_id", "type", "data", "payload")
"""Columns not read as one attribute of the event."""
_ATTRIBUTE_COLUMNS: Final = [
    (f.name, f.type, attrgetter(f.name)) for f in SCHEMA if f.name not in _SPECIAL
]


class _CursorView(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What the columns take of a ``Cursor``, with its defaults."""

    page: int = 0
    last_item_key: str | None = None


_COLUMNS: Final = {*(name for name, _, _ in _ATTRIBUTE_COLUMNS), "data"}
_COLUMN_FIELDS: Final = _COLUMNS | {"cursor", "last_error"}
"""The event fields columns are made of (``_ALIASES`` reads the last two)."""


def _default(field: msgspec.structs.FieldInfo) -> Any:
    if field.default_factory is not msgspec.NODEFAULT:
        return msgspec.field(default_factory=field.default_factory)
    return field.default


def _view(event_type: type[Any]) -> type[Any]:
    aliases = _ALIASES.get(event_type, {})
    # Only the fields columns are made of: decoding the others (a checkpoint's counts, a
    # task's depth...) would only cost, and the payload was validated by the projector
    # already. The event type's order, which is the payload's: msgspec decodes keys in
    # field order fastest.
    own = [
        (
            f.encode_name,
            _CursorView if f.name == "cursor" else f.type,
            _default(f),
        )
        for f in msgspec.structs.fields(event_type)
        if f.name in _COLUMN_FIELDS
    ]
    absent = [
        (name, None, None)
        for name in _COLUMNS
        if name not in event_type.__struct_fields__ and name not in aliases
    ]
    return msgspec.defstruct(
        event_type.__name__,
        own + sorted(absent),
        namespace=aliases,
        tag_field="type",
        tag=tag_of(event_type),
        kw_only=True,
        frozen=True,
        gc=False,
    )


@functools.cache
def _views() -> tuple[msgspec.msgpack.Decoder[list[Any]], dict[type[Any], str]]:
    """The decoder of a batch's payloads into views, and each view's tag: built at the
    first batch (a few ms), not by every projector that imports this module, most of which
    never start a writer (a small crawl's)."""
    views = tuple(_view(t) for t in EVENT_TYPES)
    envelope = msgspec.defstruct(
        "_ViewEnvelope",
        [("version", Literal[SCHEMA_VERSION]), ("event", Union[views])],  # noqa: UP007
        array_like=True,
        frozen=True,
        gc=False,
    )
    batch = list[envelope]  # type: ignore[valid-type]
    return msgspec.msgpack.Decoder(batch), {view: tag_of(view) for view in views}


_raw_decoder = msgspec.msgpack.Decoder(list[msgspec.Raw])
_json = msgspec.json.Encoder()


def pack(entries: Sequence[LogEntry]) -> tuple[bytes, bytes]:
    """The stream IDs (newline-separated) and the payloads, joined."""
    ids = _ID_SEPARATOR.join([e.stream_id for e in entries]).encode()
    return ids, b"".join([e.payload for e in entries])


def table_of(count: int, ids: bytes, payloads: bytes) -> pa.Table:
    """What ``to_table`` makes of the ``count`` entries ``pack`` packed, value for value."""
    # One msgpack array: the payloads are whole msgpack values, one after the other, so
    # msgspec finds where each ends (the projector's thread does not count them).
    array_of_all = b"\xdd" + struct.pack(">I", count) + payloads
    sizes = pa.array(list(map(len, _raw_decoder.decode(array_of_all))), pa.int32())
    offsets = pa.concat_arrays([pa.array([0], pa.int32()), pc.cumulative_sum(sizes)])
    payload_column = pa.Array.from_buffers(
        pa.binary(), count, [None, offsets.buffers()[1], pa.py_buffer(payloads)]
    )
    id_column = pc.split_pattern(pa.array([ids.decode()]), _ID_SEPARATOR).flatten()
    views_decoder, tags = _views()
    try:
        events = [e.event for e in views_decoder.decode(array_of_all)]
    except (msgspec.DecodeError, msgspec.ValidationError):
        entries = zip(id_column.to_pylist(), payload_column.to_pylist(), strict=True)
        return to_table([LogEntry(i, decode(p), p) for i, p in entries])
    items = map(attrgetter("data"), events)
    columns: dict[str, pa.Array] = {
        "stream_id": id_column,
        "type": pa.array(list(map(tags.__getitem__, map(type, events))), pa.string()),
        "data": pa.array([None if d is None else _json.encode(d).decode() for d in items]),
        "payload": payload_column,
    }
    for name, arrow_type, get in _ATTRIBUTE_COLUMNS:
        column = pa.array(list(map(get, events)), arrow_type)
        if pa.types.is_floating(arrow_type) and not pc.all(pc.is_finite(column)).as_py():
            # JSON has no NaN nor infinity: to_table reads them back as nulls.
            column = pc.if_else(pc.is_finite(column), column, None)
        columns[name] = column
    return pa.table([columns[f.name] for f in SCHEMA], schema=SCHEMA)


# --- the process -------------------------------------------------------------------------


class SegmentWriter:
    """The writer process of one projector, as an async context manager.

    Started by ``start`` (by the projector, once it is behind the log), it is fed each
    batch as soon as it is read (``feed``), so that it builds the batch's columns while
    the projector reads and folds the next ones; ``end_segment`` then asks for the
    segment of everything fed since the last one, and ``segment`` waits for it. A commit
    that sent its whole buffer at once made the projector wait, at its end, for a whole
    commit's table to be built.

    The pipes are written and read in worker threads, blocking, without the GIL: fed
    from the event loop, whose thread folds, the process got 64 KB (a pipe's buffer) at
    each turn of the loop and waited for more most of the time. ``start`` must run in the
    thread the projector runs in: the process is tied to it (``PR_SET_PDEATHSIG`` fires
    when that thread ends).
    """

    def __init__(self, archive: Path, lock_fd: int) -> None:
        self.archive = archive
        self.lock_fd = lock_fd
        self._stack = AsyncExitStack()
        self._tasks: TaskGroup | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._send: MemoryObjectSendStream[bytes] | None = None
        self._ready = False

    async def __aenter__(self) -> Self:
        self._tasks = await self._stack.enter_async_context(anyio.create_task_group())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        process = self._process
        if self._send is not None:
            # The feeder ends with its stream, and the process with its input.
            self._send.close()
        if exc_type is not None and process is not None:
            process.kill()
        try:
            return await self._stack.__aexit__(exc_type, exc, tb)
        finally:
            if process is not None:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(_reap, process)

    @property
    def running(self) -> bool:
        return self._process is not None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    async def start(self) -> None:
        """Start the process (it takes a few tenths of a second to import Arrow)."""
        assert self._tasks is not None, "enter the writer first"
        if self._process is not None:
            return
        process = self._process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(self.archive), str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            pass_fds=(self.lock_fd,),
        )
        assert process.stdin is not None
        with contextlib.suppress(OSError):  # a bigger pipe where the system allows it
            fcntl.fcntl(process.stdin.fileno(), _F_SETPIPE_SZ, PIPE_BYTES)
        self._send, receive = anyio.create_memory_object_stream[bytes](math.inf)
        self._tasks.start_soon(self._feed, process.stdin, receive)

    async def wait_ready(self) -> None:
        """Wait until the process has started and can take batches."""
        if not self._ready:
            await self._receive(len(_READY))
            self._ready = True

    def feed(self, entries: Sequence[LogEntry]) -> None:
        """Send entries, the next ones of the log, to the segment in the making."""
        assert self._send is not None, "start the writer first"
        self._send.send_nowait(b"".join(_frame(_BATCH, len(entries), *pack(entries))))

    def end_segment(self) -> None:
        """Ask for the segment of everything fed since the last one."""
        assert self._send is not None, "start the writer first"
        self._send.send_nowait(_frame(_END, 0, b"", b"")[0])

    async def segment(self) -> SegmentInfo:
        """The segment ``end_segment`` asked for, once written (in the order asked)."""
        await self.wait_ready()
        (size,) = _REPLY.unpack(await self._receive(_REPLY.size))
        answer = msgspec.msgpack.decode(await self._receive(size), type=_Reply)
        if answer.segment is None:
            raise WriterFailed(f"the segment writer could not write a segment: {answer.error}")
        return answer.segment

    async def _receive(self, size: int) -> bytes:
        process = self._process
        assert process is not None and process.stdout is not None, "start the writer first"
        try:
            return await anyio.to_thread.run_sync(_read_exactly, process.stdout, size)
        except (OSError, EOFError):
            raise self._gone() from None

    async def _feed(self, sink: IO[bytes], receive: MemoryObjectReceiveStream[bytes]) -> None:
        async with receive:
            async for message in receive:
                try:
                    await anyio.to_thread.run_sync(_write, sink, message)
                except OSError:
                    raise self._gone() from None
        with contextlib.suppress(OSError):
            sink.close()

    def _gone(self) -> WriterFailed:
        process = self._process
        assert process is not None
        return WriterFailed(
            f"the segment writer process (pid {process.pid}) is gone "
            f"(exit code {process.poll()}); the projector stops, and its next start "
            "reads the uncommitted events again"
        )


PIPE_BYTES: Final = 1 << 20
"""The pipe to the writer holds a batch or so (64 KB by default)."""
_F_SETPIPE_SZ: Final = 1031
_EXIT_WAIT_S: Final = 10.0


def _write(sink: IO[bytes], message: bytes) -> None:
    sink.write(message)
    sink.flush()


def _reap(process: subprocess.Popen[bytes]) -> None:
    for stream in (process.stdin, process.stdout):
        with contextlib.suppress(OSError):
            if stream is not None:
                stream.close()
    try:
        process.wait(_EXIT_WAIT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


_BATCH: Final = 0
_END: Final = 1


def _frame(kind: int, count: int, ids: bytes, payloads: bytes) -> tuple[bytes, ...]:
    return _HEADER.pack(kind, count, len(ids), len(payloads)), ids, payloads


def _read_exactly(source: IO[bytes], size: int) -> bytes:
    data = source.read(size)
    if len(data) != size:
        raise EOFError
    return data


def _die_with_parent(parent: int) -> None:
    libc_name = ctypes.util.find_library("c")
    if sys.platform == "linux" and libc_name:
        libc = ctypes.CDLL(libc_name, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        # The projector died before the line above: nothing would kill this process.
        sys.exit(0)


def serve(archive: Path, source: IO[bytes], sink: IO[bytes]) -> None:
    """Build each batch's table as it comes, and write a segment of them at each end."""
    sink.write(_READY)
    sink.flush()
    tables: list[pa.Table] = []
    error: str | None = None
    while True:
        try:
            kind, count, ids_size, payloads_size = _HEADER.unpack(
                _read_exactly(source, _HEADER.size)
            )
            ids = _read_exactly(source, ids_size)
            payloads = _read_exactly(source, payloads_size)
        except EOFError:
            return
        if kind == _BATCH:
            if error is None:
                try:
                    tables.append(table_of(count, ids, payloads))
                except Exception as exc:  # told to the projector at the end of the segment
                    error = f"{type(exc).__name__}: {exc}"
            continue
        try:
            if error is not None:
                raise WriterFailed(error)
            reply = _Reply(segment=write_table(archive, pa.concat_tables(tables)))
        except Exception as exc:  # told to the projector, which raises it
            reply = _Reply(error=f"{type(exc).__name__}: {exc}")
        tables, error = [], None
        message = msgspec.msgpack.encode(reply)
        sink.write(_REPLY.pack(len(message)) + message)
        sink.flush()


def main(argv: Sequence[str]) -> int:
    """The writer process: ``python -m projector._writer <archive dir> <projector pid>``."""
    archive, parent = Path(argv[0]), int(argv[1])
    _die_with_parent(parent)
    # The replies go to a descriptor of their own: whatever else might print to stdout
    # (a warning from a library) goes to stderr instead of into the pipe's messages.
    with os.fdopen(os.dup(sys.stdout.fileno()), "wb") as replies:
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
        serve(archive, sys.stdin.buffer, replies)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
