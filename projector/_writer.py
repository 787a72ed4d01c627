"""The archive writer: a child process that turns committed batches into files.

Building Arrow tables and writing Parquet costs about as much CPU per event as reading and
folding it. In a thread the two fight over the GIL; in a child process they run on two
cores. The projector sends each commit (the batch's stream IDs and stored bytes, the
snapshot bytes, the new position) over a pipe and gets the committed manifest back; one
commit is in flight at a time, so they land in order.

The child inherits the projector's lock file descriptor: if the projector is killed while
the child finishes a commit, the lock is held until the child is done, and a new
projector cannot start on a half-committed directory.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Self

import anyio
import msgspec
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from eventlog import CrawlogError, LogEntry, decode
from projector._archive import merge_segments, write_segment
from projector._compaction import plan as plan_compaction
from projector._store import Manifest, Store

_LENGTH = struct.Struct("!I")


class CommitRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One commit: what to archive and snapshot, and the position it commits."""

    position: str
    ids: list[str]
    payloads: list[bytes]
    snapshot: bytes | None = None
    snapshot_position: str = ""


class CommitReply(msgspec.Struct, frozen=True, kw_only=True):
    """The manifest now committed, or why the commit failed."""

    manifest: Manifest | None = None
    error: str | None = None


class Committer:
    """Writes commits into a job's store, in order (runs in the writer process)."""

    def __init__(self, store: Store, manifest: Manifest) -> None:
        self.store = store
        self.manifest = manifest

    def commit(self, request: CommitRequest) -> Manifest:
        """Write the segment and snapshot, then the manifest (the commit), then compact."""
        old = self.manifest
        segments = old.segments
        if request.ids:
            entries = [
                LogEntry(i, decode(p), p)
                for i, p in zip(request.ids, request.payloads, strict=True)
            ]
            segments = (*segments, write_segment(self.store.archive, entries))
        name, snapshot_position = old.snapshot, old.snapshot_position
        if request.snapshot is not None:
            name = self.store.write_snapshot(request.snapshot, request.snapshot_position)
            snapshot_position = request.snapshot_position
        manifest = Manifest(
            job=old.job,
            position=request.position,
            segments=segments,
            snapshot=name,
            snapshot_position=snapshot_position,
            events=old.events + len(request.ids),
        )
        self.store.commit(manifest)
        if name != old.snapshot:
            self.store.remove_unreferenced(manifest)
        self.manifest = self._compact(manifest)
        return self.manifest

    def _compact(self, manifest: Manifest) -> Manifest:
        """Merge a run of small segments, if there is one; a commit of its own."""
        run = plan_compaction(manifest.segments)
        if run is None:
            return manifest
        start, end = run
        merged = merge_segments(self.store.archive, manifest.segments[start:end])
        segments = (*manifest.segments[:start], merged, *manifest.segments[end:])
        compacted = msgspec.structs.replace(manifest, segments=segments)
        self.store.commit(compacted)
        self.store.remove_unreferenced(compacted)
        return compacted


class ArchiveWriter:
    """The projector's side of the writer process."""

    def __init__(self, process: Process) -> None:
        self._process = process
        assert process.stdout is not None and process.stdin is not None
        self._replies = BufferedByteReceiveStream(process.stdout)
        self._requests = process.stdin

    @classmethod
    async def start(cls, store: Store, lock_fd: int) -> Self:
        """Start the writer process for ``store``, sharing the lock ``lock_fd``."""
        command = [
            sys.executable, "-m", "projector._writer",
            str(store.root.parent.parent), store.job, str(lock_fd),
        ]  # fmt: skip
        process = await anyio.open_process(command, pass_fds=(lock_fd,), stderr=None)
        return cls(process)

    async def commit(self, request: CommitRequest) -> Manifest:
        """Have the writer commit ``request``; the manifest it committed."""
        payload = _encoder.encode(request)
        try:
            await self._requests.send(_LENGTH.pack(len(payload)) + payload)
            (size,) = _LENGTH.unpack(await self._replies.receive_exactly(_LENGTH.size))
            reply = _reply_decoder.decode(await self._replies.receive_exactly(size))
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.IncompleteRead) as exc:
            raise CrawlogError(
                f"the projector's archive writer process died ({type(exc).__name__}): "
                "see its error above; restart the projector, nothing committed is lost"
            ) from None
        if reply.manifest is None:
            raise CrawlogError(f"archive commit failed: {reply.error}")
        return reply.manifest

    async def aclose(self) -> None:
        """Let the writer finish and exit (it stops when its input closes)."""
        await self._requests.aclose()
        with anyio.CancelScope(shield=True):
            await self._process.wait()
            await self._process.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


_encoder = msgspec.msgpack.Encoder()
_request_decoder = msgspec.msgpack.Decoder(CommitRequest)
_reply_decoder = msgspec.msgpack.Decoder(CommitReply)


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    data = stream.read(size)
    return data if len(data) == size else None


def serve(data_dir: Path, job: str, requests: BinaryIO, replies: BinaryIO) -> None:
    """The writer process's loop: one commit per request, until its input closes."""
    store = Store(data_dir, job)
    committer = Committer(store, store.read_manifest())
    while (header := _read_exactly(requests, _LENGTH.size)) is not None:
        body = _read_exactly(requests, _LENGTH.unpack(header)[0])
        if body is None:
            return  # the projector died mid-request: nothing of it was written
        try:
            reply = CommitReply(manifest=committer.commit(_request_decoder.decode(body)))
        except (CrawlogError, OSError) as exc:
            reply = CommitReply(error=str(exc))
        data = _encoder.encode(reply)
        replies.write(_LENGTH.pack(len(data)) + data)
        replies.flush()


if __name__ == "__main__":
    # argv: data dir, job, the inherited lock fd (kept open, unused, for as long as we run)
    serve(Path(sys.argv[1]), sys.argv[2], sys.stdin.buffer, sys.stdout.buffer)
