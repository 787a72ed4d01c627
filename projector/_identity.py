"""The job's identity as its archive records it, and the check that the store is the job's.

Light on purpose (msgspec and ``eventlog`` only): a crawl, a worker and ``status`` read the
manifest's few identity fields before anything else, without the archive's Arrow.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import redis.asyncio as aioredis

from eventlog import (
    START,
    ArchiveFacts,
    JobIdentity,
    JobKeys,
    check_job_name,
    create_identity,
    store_facts,
    store_verdict,
)

MANIFEST = "manifest.json"


class _ManifestIdentity(msgspec.Struct, kw_only=True):
    """The fields of a manifest (``_store.Manifest``) that say who and where the job is."""

    position: str = START
    events: int = 0
    identity: str | None = None
    epoch: int = 0


def archive_facts(data_dir: Path, job: str) -> ArchiveFacts:
    """What the job's committed manifest says of it (nothing committed: an empty one)."""
    path = data_dir / "jobs" / check_job_name(job) / MANIFEST
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return ArchiveFacts()
    try:
        found = msgspec.json.decode(data, type=_ManifestIdentity)
    except msgspec.MsgspecError:
        # The projector rebuilds a damaged manifest from the segments as it starts (and
        # checks the store then): nothing here can say more than an empty one.
        return ArchiveFacts()
    return ArchiveFacts(
        job_id=found.identity, epoch=found.epoch, position=found.position, events=found.events
    )


async def check_store(
    redis: aioredis.Redis, data_dir: Path, job: str, *, create: bool
) -> JobIdentity | None:
    """The job's identity once the store is found to be the job's own (``StoreLost`` if it
    lost it); with ``create``, minted for a job that has none yet (a new one, or one begun
    before identities), else None for such a job."""
    keys = JobKeys(job)
    archive = archive_facts(data_dir, job)
    facts = await store_facts(redis, keys)
    verdict = store_verdict(job, facts, archive)
    if verdict == "ok":
        return facts.identity
    if not create:
        return None
    # A job the archive knows keeps its identity (committed before the store had one).
    minted = JobIdentity(job_id=archive.job_id) if archive.job_id is not None else None
    return await create_identity(redis, keys, minted)


WORKERS_DIR = "workers"
IN_FLIGHT_SUFFIX = ".in-flight-at-loss.json"


def in_flight_path(data_dir: Path, job: str, worker: str) -> Path:
    """Where a worker that found the store lost leaves the tasks it had sent a request for
    and could not log (JSON: task id -> worker): ``<data dir>/workers/<name>/<job>...``."""
    return data_dir / WORKERS_DIR / worker / f"{check_job_name(job)}{IN_FLIGHT_SUFFIX}"


def in_flight_at_loss(data_dir: Path, job: str) -> tuple[dict[str, str], list[Path]]:
    """Task id -> worker of every such task the workers of this data directory left, and
    the files they were read from (deleted once the restore is done)."""
    found: dict[str, str] = {}
    paths = sorted((data_dir / WORKERS_DIR).glob(f"*/{check_job_name(job)}{IN_FLIGHT_SUFFIX}"))
    read = []
    for path in paths:
        try:
            found.update(msgspec.json.decode(path.read_bytes(), type=dict[str, str]))
        except (OSError, msgspec.MsgspecError):
            continue  # a torn file: those refetches go uncounted
        read.append(path)
    return found, read
