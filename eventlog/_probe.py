"""Whether the store takes a write now: what a worker's offline ride asks it over and over
(``crawler._offline``).

A PING is not enough: a server at its ``maxmemory`` (policy ``noeviction``) still answers
one, and reads, while it refuses every write with ``OOM``. So the probe is a write that
changes nothing: ``SET`` of `JobKeys.write_probe` with ``XX`` (only if it exists), a key
never created. The server refuses it as it refuses any write (``OOM``, ``MISCONF``,
``LOADING``, ``BUSY``) and otherwise answers nil, creating nothing.

It is sent as a one-command pipeline whose refusal comes back as its reply: a client that
rides out a full server (``ride_out_retry``) would retry the refusal instead of telling it.
What a refusal means is `refusal_means`, a function of the server's error code alone.
"""

from __future__ import annotations

from typing import Literal

import redis.asyncio as aioredis
import redis.exceptions

from eventlog._keys import JobKeys

StoreState = Literal["answers", "full", "down"]
"""How the store answers a write: it takes it (or refuses it for a reason a write says
itself), it is out of memory (``OOM``), or it serves nothing (no answer in time, or a
refusal of a server loading its data, held by a script, or without its primary)."""

_NOT_SERVING = frozenset({"LOADING", "BUSY", "MASTERDOWN"})
_FULL = "OOM"


def refusal_means(code: str) -> StoreState:
    """What a server's refusal of a write with the error ``code`` (its first word: ``OOM``,
    ``MISCONF``, ...) says of it: out of memory (``OOM``, ``maxmemory`` reached with
    ``noeviction``: it answers, reads included, and refuses writes); serving nothing
    (``LOADING``, ``BUSY``, ``MASTERDOWN``); answering otherwise: one that cannot save
    (``MISCONF``) or refuses this user a command answers, and the write that fails says
    why, once."""
    if code == _FULL:
        return "full"
    if code in _NOT_SERVING:
        return "down"
    return "answers"


def error_code(error: redis.exceptions.ResponseError) -> str:
    """The server's error code of ``error`` (redis-py keeps it apart from the message for
    the codes it knows, and leaves it as the message's first word for the others)."""
    code = getattr(error, "status_code", None)
    if isinstance(code, str) and code:
        return code
    text = str(error)
    return text.split(" ", 1)[0] if text else ""


async def probe_store(client: aioredis.Redis, keys: JobKeys) -> StoreState:
    """Send the store a write that changes nothing (see the module); how it answered.

    A server that does not answer at all is not told here: the caller bounds the wait
    (the client's own retries go on meanwhile), and connection errors are raised."""
    async with client.pipeline(transaction=False) as pipe:
        pipe.set(keys.write_probe, b"", xx=True)
        (reply,) = await pipe.execute(raise_on_error=False)
    if isinstance(reply, redis.exceptions.ResponseError):
        return refusal_means(error_code(reply))
    return "answers"
