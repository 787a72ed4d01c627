"""What a worker does about a store that lost its job: it notices (the job's identity), and
leaves behind the tasks whose requests the lost store never heard of, for ``crawlog
restore`` to count as refetched when they come again."""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path

import msgspec
import redis.asyncio as aioredis

from eventlog import JobIdentity, StoreLost, write_atomic


def is_store_lost(exc: BaseException) -> bool:
    """Whether ``exc`` is (or a group holding) `StoreLost`."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(StoreLost)[0] is not None
    return isinstance(exc, StoreLost)


def save_in_flight_at_loss(data_dir: Path, job: str, worker: str, tasks: dict[str, str]) -> None:
    """Leave the tasks whose requests the lost store never heard of for ``crawlog
    restore`` (`projector.in_flight_at_loss`), beside the worker's other local files."""
    from projector import in_flight_path

    path = in_flight_path(data_dir, job, worker)
    with suppress(OSError):  # at worst, those refetches go uncounted
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, msgspec.json.encode(tasks))


async def store_identity(redis: aioredis.Redis, data_dir: Path, job: str) -> JobIdentity | None:
    """The job's identity in the store; `StoreLost` if the store lost the job its archive
    (where this worker has it) knows."""
    from projector import check_store  # light: the manifest's identity fields only

    return await check_store(redis, data_dir, job, create=False)
