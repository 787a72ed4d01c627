"""A job's runs: which one is the latest and whether it finished (key `JobKeys.run`).

``crawlog recrawl`` reads it under the job's crawl lock: a run that is ``running`` (its
recrawl was killed or stopped) is finished by the next recrawl, never replaced by a new one;
only a ``finished`` run (or the first crawl, which has no record) is followed by the next.
"""

from __future__ import annotations

from typing import Final, Literal

import msgspec
import redis.asyncio as aioredis

from eventlog._connection import redis_errors
from eventlog._events import FIRST_RUN
from eventlog._keys import JobKeys

RunState = Literal["running", "finished"]
RUNNING: Final = "running"
FINISHED: Final = "finished"


class RunRecord(msgspec.Struct, frozen=True, kw_only=True):
    """The job's latest run and whether it ended."""

    run: int = FIRST_RUN
    state: RunState = FINISHED
    """A job without a record is its first crawl's: ``finished`` once its tasks are."""


async def read_run(redis: aioredis.Redis, keys: JobKeys) -> RunRecord:
    """The job's latest run as recorded (the first crawl's if none is)."""
    with redis_errors("reading the job's run"):
        raw = await redis.hgetall(keys.run)
    if not raw:
        return RunRecord()
    fields = {_text(k): _text(v) for k, v in raw.items()}
    state: RunState = RUNNING if fields.get("state") == RUNNING else FINISHED
    return RunRecord(run=int(fields.get("run", FIRST_RUN)), state=state)


async def write_run(redis: aioredis.Redis, keys: JobKeys, record: RunRecord) -> None:
    """Record ``record`` as the job's latest run (one HSET: both fields at once)."""
    with redis_errors("recording the job's run"):
        await redis.hset(keys.run, mapping={"run": str(record.run), "state": record.state})


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
