"""``--durability``: when a checkpoint or a finish counts as written.

``local`` (the default): once the primary has run the script. A primary that dies before
its replica got the write loses it, and a Sentinel failover promotes that replica: the
worker was told of a checkpoint the new primary never had (its page is fetched again).

``replica``: once ``WAIT 1`` says a replica has it too. ``WAIT`` waits for the writes of
the connection it runs on, so the script and the ``WAIT`` go in one pipeline, on one
connection; redis-py sends a pipeline again as a whole when its connection breaks (a
failover), so they stay paired on the new primary too: there the script either writes
again (the old primary's write never arrived) or finds its marker event (it did), and the
``WAIT`` is about what that connection wrote. A ``WAIT`` that times out (no replica in
sync: just after a failover, before the old primary comes back as a replica) is tried
again, script and all, until ``confirm_s`` has passed; then `ReplicaUnconfirmed`. Such a
repeat usually finds its marker event and writes nothing, so its ``WAIT`` is about what
its connection wrote last, which may be older than the checkpoint: it is confirmed by a
replica that synced since (a full sync after a failover brings everything), but not
exactly by offset. Only these repeats are approximate; a ``WAIT`` that answers at once
is exact.

``WAITAOF`` is not used: its replica count waits for the replica's fsync, up to a second
with ``appendfsync everysec``, on every checkpoint.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any, Literal, get_args

import redis.asyncio as aioredis
import redis.exceptions
from redis.commands.core import AsyncScript

from eventlog._connection import DEFAULT_RIDE_OUT_S
from eventlog._exceptions import ConfigError, ReplicaUnconfirmed
from eventlog._observer import SettleMode

log = logging.getLogger(__name__)

Durability = Literal["local", "replica"]
DURABILITIES: tuple[str, ...] = get_args(Durability)
DEFAULT_DURABILITY: Durability = "local"
DURABILITY_ENV = "CRAWLOG_DURABILITY"
"""How a crawl tells its workers its ``--durability``."""

CONFIRMED_MODES: frozenset[SettleMode] = frozenset({"ckpt", "finish"})
"""The settle modes (`eventlog._observer.SettleMode`) a replica confirms."""
WAIT_REPLICAS = 1
WAIT_MS = 1_000
"""One ``WAIT``'s timeout: a replica in sync answers at once, this is only how often a
checkpoint waiting for a replica to come back tries again."""
_NOSCRIPT_RESENDS = 3


def durability_from(value: str | None) -> Durability:
    """``value`` (a flag or ``$CRAWLOG_DURABILITY``) as a `Durability`; unset: local."""
    if value is None or value == "":
        return DEFAULT_DURABILITY
    if value == "local":
        return "local"
    if value == "replica":
        return "replica"
    raise ConfigError(f"unknown durability {value!r}: use one of {', '.join(DURABILITIES)}")


async def replicas_in_sync(client: aioredis.Redis) -> int:
    """How many replicas the primary of ``client`` has online."""
    info: dict[str, Any] = await client.info("replication")
    return sum(
        1
        for key, value in info.items()
        if key.startswith("slave") and isinstance(value, dict) and value.get("state") == "online"
    )


async def require_replica(client: aioredis.Redis, url: str) -> None:
    """``ConfigError`` unless the server of ``client`` has a replica online: with none, no
    checkpoint of ``--durability replica`` could ever be confirmed."""
    if await replicas_in_sync(client) >= WAIT_REPLICAS:
        return
    raise ConfigError(
        f"--durability replica needs a server with a replica in sync, and {url} has none: "
        "run `crawlog server start --replica` (and use the Sentinel URL it prints), or crawl "
        "with --durability local"
    )


async def run_confirmed(
    client: aioredis.Redis,
    script: AsyncScript,
    keys: Sequence[str | bytes],
    args: Sequence[str | bytes | int],
    *,
    confirm_s: float = DEFAULT_RIDE_OUT_S,
    wait_ms: int = WAIT_MS,
) -> Any:
    """Run ``script`` and return its reply once a replica has what it wrote (see the
    module's docstring); `ReplicaUnconfirmed` after ``confirm_s`` without.

    The reply is the first run's, unless a later run wrote (a failover lost the first
    one's write) or refused: a repeated run of a crawlog script that went through replies
    ``dup``, which is no news to the caller.
    """
    deadline = time.monotonic() + confirm_s
    reply: Any = None
    tries = 0
    while True:
        script_reply, replicas = await _script_then_wait(client, script, keys, args, wait_ms)
        if tries == 0 or not _is_dup(script_reply):
            reply = script_reply
        tries += 1
        if _is_stale(script_reply):
            # Refused, nothing written (a promotion its caller has to follow first, see
            # `eventlog._failover`): nothing for a replica to confirm.
            return script_reply
        if replicas >= WAIT_REPLICAS:
            if tries > 1:
                log.warning("a replica confirmed the write after %d tries", tries)
            return reply
        if tries == 1:
            log.warning("no replica confirmed a write within %d ms: waiting for one", wait_ms)
        if time.monotonic() >= deadline:
            raise ReplicaUnconfirmed(
                f"no replica confirmed a write within {confirm_s:g} s (--durability replica): "
                "check that the replica set runs (`crawlog server status`), or crawl with "
                "--durability local; the same command resumes the crawl"
            )


def _is_dup(reply: Any) -> bool:
    return isinstance(reply, list) and bool(reply) and reply[0] == b"dup"


def _is_stale(reply: Any) -> bool:
    return isinstance(reply, list) and bool(reply) and reply[0] == b"stale"


async def _script_then_wait(
    client: aioredis.Redis,
    script: AsyncScript,
    keys: Sequence[str | bytes],
    args: Sequence[str | bytes | int],
    wait_ms: int,
) -> tuple[Any, int]:
    # As `eventlog._connection.script_pipeline`: a pipeline retried on a new server gets
    # NOSCRIPT (redis-py loads a pipeline's scripts before its first attempt only).
    for resend in range(_NOSCRIPT_RESENDS + 1):
        async with client.pipeline(transaction=False) as pipe:
            await script(keys=keys, args=args, client=pipe)
            pipe.execute_command("WAIT", WAIT_REPLICAS, wait_ms)
            try:
                script_reply, replicas = await pipe.execute()
            except redis.exceptions.NoScriptError:
                if resend == _NOSCRIPT_RESENDS:
                    raise
                continue
            return script_reply, int(replicas)
    raise AssertionError("unreachable")
