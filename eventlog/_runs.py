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
    intervals: tuple[float, float, float] | None = None
    """The job's revisit intervals as ``crawlog recrawl`` was last given them: first,
    least, most, in seconds (None: the defaults, ``projector.RevisitPolicy``)."""


async def read_run(redis: aioredis.Redis, keys: JobKeys) -> RunRecord:
    """The job's latest run as recorded (the first crawl's if none is)."""
    with redis_errors("reading the job's run"):
        raw = await redis.hgetall(keys.run)
    if not raw:
        return RunRecord()
    fields = {_text(k): _text(v) for k, v in raw.items()}
    state: RunState = RUNNING if fields.get("state") == RUNNING else FINISHED
    given = fields.get("intervals")
    intervals = None
    if given:
        first, least, most = (float(part) for part in given.split(",", 2))
        intervals = (first, least, most)
    return RunRecord(run=int(fields.get("run", FIRST_RUN)), state=state, intervals=intervals)


async def write_run(redis: aioredis.Redis, keys: JobKeys, record: RunRecord) -> None:
    """Record ``record`` as the job's latest run (one HSET: its fields at once; intervals
    not given keep those recorded)."""
    fields = ["run", str(record.run), "state", record.state]
    if record.intervals is not None:
        fields += ["intervals", _joined(record.intervals)]
    with redis_errors("recording the job's run"):
        await redis.hset(keys.run, items=fields)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _joined(intervals: tuple[float, float, float]) -> str:
    return ",".join(repr(float(seconds)) for seconds in intervals)
