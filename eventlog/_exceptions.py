"""The one exception tree of crawlog.

Errors from redis-py, DuckDB and httpx are translated into these at the boundary, with
messages that tell the user what to do next. The base and the errors of the event log and
its server are defined here; the others where they are raised, marked ``[crawler]`` or
``[projector]`` below, and each package exports its own (``from projector import
ProjectorBusy``). tests/test_every_crawlog_error_is_drawn_in_the_tree_and_exported.py keeps
this tree and the classes in step::

    CrawlogError
    ├── ConfigError ............ bad input: a URL, a job name, an option, a data directory
    ├── ServerError ............ the Redis/Valkey server is not there or not usable:
    │   ├── ServerUnreachable .. the Redis/Valkey server cannot be reached
    │   │   └── ReplicaUnconfirmed  no replica confirmed a write in time (--durability replica)
    │   ├── ServerCannotPersist  it refuses writes: it cannot save them (a full disk)
    │   ├── ServerOutOfMemory .. it refused writes at its ``maxmemory`` for longer than a
    │   │                        long-running process rides out
    │   ├── ServerEvicts ....... its ``maxmemory-policy`` may evict the job's keys
    │   ├── ServerStartError ... the embedded valkey-server did not come up
    │   └── StoreLost .......... it lost a job's keys (flushed, evicted, restarted on a
    │                            short AOF) or holds another job's: `crawlog restore`
    ├── EventDecodeError ....... bytes that are not a crawlog event of a known version
    │   └── PoisonEntry ........ ... found in a stream, with the entry's stream ID
    ├── LeaseLost .............. a fenced write by a worker that no longer owns the task
    ├── WorkerNameTaken ........ another live process holds this worker name
    ├── JobAlreadyCrawled ...... another live ``crawlog crawl`` runs this job
    ├── JournalFull ............ a worker's local journal cannot be written (a full disk)
    ├── ProjectorHeld .......... another projector, on any machine, holds the job's lease
    ├── ProjectorLeaseLost ..... a projector stalled past its lease, which another took (or
    │                            committed under) since: it neither commits nor trims
    ├── OperatorRefused ........ an operator command that does not apply now (a retry of a
    │   │                        task still running...): nothing was written
    │   └── UnknownTask ........ a task id or URL the job's log has no task for
    ├── SpiderOutputError ...... [crawler] a spider yielded what the log cannot carry: its
    │                            task fails with it, the worker goes on
    ├── DropItem ............... [crawler] raised by an item pipeline step: the item is not
    │                            recorded, its drop counted by reason; not a failure
    ├── DropRequest ............ [crawler] raised by a spider's request or response hook:
    │                            not sent (or not parsed), the task fails with the reason
    ├── UncertainAction ........ [crawler] a task's once-only action was intended but not
    │                            logged as done (its worker died mid-way): the task is
    │                            paused for an operator to resolve
    ├── ActionAborted .......... [crawler] a person decided to stop a task at its uncertain
    │                            action (crawlog resolve --abort): the task fails
    ├── FlowChanged ............ [crawler] a flow's steps are not those its checkpoint was
    │                            taken with: its task fails rather than resume
    ├── FlowAborted ............ [crawler] a flow's uncertain action has the policy abort
    │                            (or it ran outside a worker's task): its task fails
    ├── ArchiveCorrupt ......... [projector] an archive segment cannot be read back
    ├── FeedDatabaseError ...... [projector] the PostgreSQL database an export feeds cannot
    │                            be reached or refused its writes (nothing half-written)
    ├── ArchiveBehind .......... [projector] a data directory's archive ends before what
    │                            the job's log was trimmed to: it lacks events
    ├── NoProjectedData ........ [projector] a report, query or export of a job that has
    │                            nothing committed yet (no projector has run)
    ├── ProjectorBusy .......... [projector] another projector process holds the job's lock
    └── WriterFailed ........... [projector] the segment writer process could not write a
                                 segment, or is gone
"""

from __future__ import annotations

from pathlib import Path


class CrawlogError(Exception):
    """Base of every error crawlog raises on purpose."""


class ConfigError(CrawlogError):
    """Bad input from the user: a URL, a name, an option or a directory."""


class ServerError(CrawlogError):
    """Something is wrong with the Redis-protocol server."""


class ServerUnreachable(ServerError):
    """The server cannot be reached (refused, timed out, bad credentials)."""


class ReplicaUnconfirmed(ServerUnreachable):
    """No replica confirmed a checkpoint or finish in time (``--durability replica``): the
    write is on the primary only, and the worker was not told it went through."""


class ServerCannotPersist(ServerError):
    """The server refuses every write because it cannot save to disk (Redis's ``MISCONF``:
    its append-only file or snapshot cannot be written, most often as the disk is full).

    Nothing it accepted before is lost, and the refused write was not applied: once the
    server can write again (it retries by itself), the same command carries on."""

    def __init__(self, message: str, detail: str, *, disk_full: bool) -> None:
        super().__init__(message)
        self.detail = detail
        """The server's own words, e.g. "Errors writing to the AOF file: No space left..."."""
        self.disk_full = disk_full


class ServerOutOfMemory(ServerError):
    """The server refused writes with ``OOM`` (``maxmemory`` reached, policy ``noeviction``)
    for longer than the caller waits it out. The refused writes were not applied."""


class ServerEvicts(ServerError):
    """The server's ``maxmemory-policy`` evicts keys when memory runs out: it would delete a
    job's tasks, leases or log without a word, so crawlog does not write to it."""

    def __init__(self, message: str, policy: str) -> None:
        super().__init__(message)
        self.policy = policy


class ServerStartError(ServerError):
    """The embedded valkey-server could not be started."""


class StoreLost(ServerError):
    """The store no longer holds what the job's archive says it wrote: its keys are gone
    (a ``FLUSHALL``, an evicting ``maxmemory-policy``, a server restarted on a missing or
    cut append-only file), its consumer group is gone (``NOGROUP``), its log is older than
    the committed position, or it holds another job of the same name.

    Nothing is written once it is noticed: going on would take the job for a new one and
    fetch every page again. ``crawlog restore --job J`` rebuilds the keys from the archive.
    """

    def __init__(self, job: str, what: str) -> None:
        super().__init__(
            f"the store lost job {job!r} ({what}); its archive still knows what was done: "
            f"run `crawlog restore --job {job}`, then the same crawl command again"
        )
        self.job = job
        self.what = what


class EventDecodeError(CrawlogError):
    """Bytes that do not decode to an event of a known tag and schema version."""


class PoisonEntry(EventDecodeError):
    """A stream entry that cannot be decoded; move it aside with ``dead_letter``."""

    def __init__(self, stream: str, entry_id: str, reason: str, fields: dict[bytes, bytes]):
        super().__init__(f"entry {entry_id} of {stream} cannot be decoded: {reason}")
        self.stream = stream
        self.entry_id = entry_id
        self.reason = reason
        self.fields = fields


class LeaseLost(CrawlogError):
    """The caller no longer owns the task's lease: another worker reclaimed it."""

    def __init__(self, task_entry: str, consumer: str, owner: str | None):
        holder = f"now held by {owner!r}" if owner else "no longer pending"
        super().__init__(
            f"lease on task entry {task_entry} lost by {consumer!r} ({holder}); nothing was written"
        )
        self.task_entry = task_entry
        self.consumer = consumer
        self.owner = owner


class WorkerNameTaken(CrawlogError):
    """Another live process runs under this worker name (its leases are that process's)."""

    def __init__(self, worker: str, expires_in_ms: int):
        super().__init__(
            f"worker name {worker!r} is held by another live process: pick another --name, "
            f"or stop that process (a killed one releases the name within {expires_in_ms} ms)"
        )
        self.worker = worker
        self.expires_in_ms = expires_in_ms


class JobAlreadyCrawled(CrawlogError):
    """Another live ``crawlog crawl`` holds the job's crawl lock (``hold_job_crawl``): a
    second crawl of it would start workers beside that crawl's and show its progress as
    its own."""

    def __init__(self, job: str, pid: int | None, since: str | None):
        held = ", ".join(
            part
            for part in (f"pid {pid}" if pid else "", f"since {since}" if since else "")
            if part
        )
        super().__init__(
            f"job {job} is already being crawled ({held or 'by a live process'}): "
            f"`crawlog status --job {job} --watch` to watch it"
        )
        self.job = job
        self.pid = pid
        self.since = since


class JournalFull(CrawlogError):
    """The worker's journal cannot be written (the disk is full or not writable): the worker
    stops taking tasks, as a write it cannot journal could be lost with the store."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(
            f"cannot write the worker's journal {path}: {reason}; free space on that disk "
            "(or give the worker another --data-dir), then start it again: its journal is "
            "flushed before it takes tasks"
        )
        self.path = path
        self.reason = reason


class ProjectorHeld(CrawlogError):
    """Another projector holds the job's lease (one per job, wherever it runs)."""

    def __init__(self, job: str, holder: str, expires_in_ms: int) -> None:
        super().__init__(
            f"another projector holds job {job!r} ({holder}): one per job is enough; stop "
            f"that one first (a killed one lets the job go within {expires_in_ms} ms)"
        )
        self.job = job
        self.holder = holder
        self.expires_in_ms = expires_in_ms


class ProjectorLeaseLost(CrawlogError):
    """A projector's lease is another's now (it stalled past it): what it read since its
    last commit is neither committed nor trimmed; the projector that holds the job goes on."""

    def __init__(self, job: str, data_dir: str) -> None:
        super().__init__(
            f"the projector of job {job!r} with data directory {data_dir} lost its lease (it "
            "was stalled past it and another projector took the job, or committed since): "
            "it stopped without committing or trimming. Nothing is lost: the log keeps "
            "what was not committed; run one projector for the job"
        )
        self.job = job
        self.data_dir = data_dir


class OperatorRefused(CrawlogError):
    """An operator command refused because it does not apply to the target's state now
    (a retry of a task that has not ended, a dead letter already replayed...).

    Nothing was written: running the same command again is safe."""


class UnknownTask(OperatorRefused):
    """A task id (or URL) the job's log has no task for."""
