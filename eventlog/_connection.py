"""Opening a redis-py asyncio client the way crawlog needs it.

Two settings matter for correctness, not only speed:

* the socket timeout bounds every blocking read: redis-py treats a read that outlasts it as a
  dead connection and retries, so a ``BLOCK`` longer than the timeout turns into a long
  hang. ``max_block_ms`` is what blocking reads may use.
* the stream commands' response callbacks are removed: crawlog parses raw replies itself
  (straight into msgspec), and redis-py's generic parsing of XRANGE/XREAD replies costs a
  third or more of a reader's time.

Commands are packed by hiredis (in C) instead of redis-py's asyncio connection, which packs
them in Python, several times slower: it shows on every script call of a dozen arguments,
and on the HMGET of every checkpoint a restarted worker sends.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import urlsplit

import anyio
import hiredis
import redis.asyncio as aioredis
import redis.asyncio.connection
import redis.exceptions
from anyio.abc import TaskGroup
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import MasterNotFoundError
from redis.backoff import EqualJitterBackoff
from redis.commands.core import AsyncScript

from eventlog._exceptions import (
    ConfigError,
    ServerCannotPersist,
    ServerError,
    ServerOutOfMemory,
    ServerUnreachable,
    StoreLost,
)
from eventlog._memory import out_of_memory_advice, require_noeviction
from eventlog._sentinel import SENTINEL_SCHEME, left_behind, sentinel_client

log = logging.getLogger(__name__)

DEFAULT_SOCKET_TIMEOUT_S = 10.0
DEFAULT_CONNECT_TIMEOUT_S = 5.0
DEFAULT_HEALTH_CHECK_S = 30
MAX_CONNECTIONS = 2**31
"""Connections a client's pool may open: as many as its commands in flight, as redis-py
allowed before 7 (from 7 on, a pool opens 100 and raises "Too many connections" past
them). A worker's tasks (up to four leases a place of its concurrency) each have a
command in flight at once as they start, beside its loops: a restart resuming 100,000
tasks failed there. The server's ``maxclients`` is the bound."""
BLOCK_MARGIN = 0.5
"""Blocking reads block for at most this fraction of the socket timeout."""

DEFAULT_RIDE_OUT_S = 60.0
"""How long a long-running process (a worker, the projector) keeps retrying a lost server
before it gives up: long enough for a restart that replays its append-only file."""
_RIDE_OUT_BASE_S = 0.05
_RIDE_OUT_CAP_S = 0.5
"""The longest wait between two tries. Short: a worker's lease renewal stuck in a long
wait after the server is back lets its leases expire under it (with chaos.py's short
leases, a cap near the lease length made live workers' tasks be taken over and fetched
twice)."""
OUTAGE_GAP_S = 5.0
"""Refusals for memory further apart than this are two outages, each said once."""
_NOSCRIPT_RESENDS = 3
_MISCONF = "MISCONF"
"""The error code of a server that cannot persist: it refuses every write (and PING)."""
_NO_SPACE = "No space left on device"

T = TypeVar("T")

_RAW_COMMANDS = ("XRANGE", "XREVRANGE", "XREAD", "XREADGROUP", "XCLAIM", "XAUTOCLAIM", "XPENDING")
_SCHEMES = ("redis", "rediss", "unix")


def max_block_ms(socket_timeout_s: float = DEFAULT_SOCKET_TIMEOUT_S) -> int:
    """The longest ``BLOCK`` a read may use on a client with this socket timeout."""
    return int(socket_timeout_s * 1000 * BLOCK_MARGIN)


def redacted(url: str) -> str:
    """``url`` with any password replaced, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def client_for(
    url: str,
    *,
    socket_timeout_s: float = DEFAULT_SOCKET_TIMEOUT_S,
    health_check_s: int = DEFAULT_HEALTH_CHECK_S,
) -> aioredis.Redis:
    """A client for ``url`` (``redis://``, ``rediss://`` or ``unix://``), not yet connected.

    ``health_check_s=0`` for a client that must read from a server that cannot persist:
    redis-py's health check is a PING, which such a server refuses with the writes.
    """
    scheme = urlsplit(url).scheme
    if scheme not in _SCHEMES and scheme != SENTINEL_SCHEME:
        raise ConfigError(
            f"unsupported Redis URL {redacted(url)!r}: use redis://, rediss://, unix:// or "
            f"{SENTINEL_SCHEME}://"
        )
    settings: dict[str, Any] = {
        "socket_timeout": socket_timeout_s,
        "socket_connect_timeout": DEFAULT_CONNECT_TIMEOUT_S,
        "decode_responses": False,
        "health_check_interval": health_check_s,
        # The raw stream replies are parsed here in their RESP2 shape (lists, not maps).
        "protocol": 2,
        "max_connections": MAX_CONNECTIONS,
    }
    try:
        if scheme == SENTINEL_SCHEME:
            client = sentinel_client(url, **settings)
        else:
            client = aioredis.Redis.from_url(url, **settings)
    except ValueError as exc:
        raise ConfigError(f"bad Redis URL {redacted(url)!r}: {exc}") from None
    pool = client.connection_pool
    pool.connection_class = _packing_in_c(pool.connection_class)
    for command in _RAW_COMMANDS:
        client.response_callbacks.pop(command, None)
    return client


ConnectionClass = type[redis.asyncio.connection.AbstractConnection]


_PACKING_IN_C: dict[str, ConnectionClass] = {}


def _packing_in_c(base: ConnectionClass) -> ConnectionClass:
    """``base`` (the plain, unix-socket or TLS connection ``from_url`` chose) packing its
    commands with hiredis; the bytes sent are the same."""
    made = _PACKING_IN_C.get(base.__qualname__)
    if made is not None and issubclass(made, base):
        return made

    class PackingInC(base):  # type: ignore[valid-type,misc]
        def pack_command(self, *args: Any) -> list[bytes]:
            # As redis-py does: "CLIENT SETNAME" as one argument is two words on the wire.
            first = args[0]
            if isinstance(first, str):
                args = (*first.encode().split(), *args[1:])
            elif b" " in first:
                args = (*first.split(), *args[1:])
            try:
                return [hiredis.pack_command(args)]
            except TypeError:
                # redis-py's own packer accepts bytearray and memoryview: so do we.
                args = tuple(
                    bytes(a) if isinstance(a, (bytearray, memoryview)) else a for a in args
                )
                try:
                    return [hiredis.pack_command(args)]
                except TypeError as exc:  # None, a bool, an object: redis-py's error for it
                    raise redis.exceptions.DataError(f"cannot send {args!r}: {exc}") from None

        async def send_packed_command(
            self, command: bytes | str | Iterable[bytes], check_health: bool = True
        ) -> None:
            writer = self._writer
            if (
                writer is None
                or not self.is_connected
                or isinstance(command, (str, bytes))
                or writer.transport.is_closing()
                or (check_health and self.health_check_interval and _health_check_due(self))
            ):
                await super().send_packed_command(command, check_health)
                return
            await _write(self, writer, command)

    PackingInC.__name__ = PackingInC.__qualname__ = f"PackingInC{base.__name__}"
    _PACKING_IN_C[base.__qualname__] = PackingInC
    return PackingInC


def _health_check_due(connection: Any) -> bool:
    return bool(asyncio.get_running_loop().time() > connection.next_health_check)


async def _write(
    connection: redis.asyncio.connection.AbstractConnection,
    writer: asyncio.StreamWriter,
    command: Iterable[bytes],
) -> None:
    """Send ``command`` as redis-py's ``send_packed_command`` does, without its
    ``asyncio.wait_for``: on Python 3.11 that is a new task for every command, a fifth of a
    script call's client CPU. The socket timeout bounds the wait only where there can be
    one: a write the socket did not take whole (the rest waits in the transport's buffer).
    Errors as redis-py's: the connection closed, then ``TimeoutError`` or
    ``ConnectionError``."""
    try:
        writer.writelines(command)
        timeout = connection.socket_timeout
        if writer.transport.get_write_buffer_size() and timeout:
            with anyio.fail_after(timeout):
                await writer.drain()
        else:
            await writer.drain()  # raises for a connection lost; waits for nothing
    except (TypeError, AttributeError) as exc:
        # As redis-py: CPython before 3.13.10 can raise these from a transport closing.
        if not writer.transport.is_closing():
            raise
        await connection.disconnect(nowait=True)
        raise redis.exceptions.ConnectionError("Connection closed while writing") from exc
    except TimeoutError:
        await connection.disconnect(nowait=True)
        raise redis.exceptions.TimeoutError("Timeout writing to socket") from None
    except OSError as exc:
        await connection.disconnect(nowait=True)
        raise redis.exceptions.ConnectionError(f"Error while writing to socket. {exc}.") from exc
    except BaseException:
        # Part of the command may be sent: the connection is of no further use.
        await connection.disconnect(nowait=True)
        raise


def ride_out_retry(seconds: float, *, where: str = "", quiet: bool = False) -> Retry:
    """A redis-py retry policy that keeps trying a lost server for at least ``seconds``.

    Exponential backoff from ``_RIDE_OUT_BASE_S`` up to ``_RIDE_OUT_CAP_S``, each wait
    jittered between half and all of it (workers that lost the server together do not come
    back in lockstep). The number of retries is counted so that even the shortest waits add
    up to ``seconds``.

    A server that refuses a write for memory (``OOM``: ``maxmemory`` reached, policy
    ``noeviction``) applied none of it and is waited out the same way: someone may raise
    ``maxmemory`` or free memory meanwhile. The first refusal of such an outage is logged
    with what to do about it (at debug level if ``quiet``: a crawl says it once for all of
    its processes); ``where`` names the server in it.
    """
    retries, waited = 0, 0.0
    while waited < seconds:
        waited += min(_RIDE_OUT_CAP_S, _RIDE_OUT_BASE_S * 2**retries) / 2
        retries += 1
    return Retry(
        EqualJitterBackoff(cap=_RIDE_OUT_CAP_S, base=_RIDE_OUT_BASE_S),
        retries,
        supported_errors=(
            redis.exceptions.ConnectionError,
            redis.exceptions.TimeoutError,
            redis.exceptions.OutOfMemoryError,
        ),
        is_retryable=_OutOfMemoryNotice(where or "REDIS_URL", seconds, quiet=quiet),
    )


class _OutOfMemoryNotice:
    """Retries every error it is shown; logs the first refusal for memory of an outage."""

    def __init__(self, where: str, seconds: float, *, quiet: bool) -> None:
        self.where = where
        self.seconds = seconds
        self.level = logging.DEBUG if quiet else logging.WARNING
        self.last_refusal = -OUTAGE_GAP_S

    def __call__(self, error: Exception) -> bool:
        if isinstance(error, redis.exceptions.OutOfMemoryError):
            now = time.monotonic()
            if now - self.last_refusal > OUTAGE_GAP_S:
                log.log(
                    self.level,
                    "%s; retrying for up to %.0f s",
                    out_of_memory_advice(self.where),
                    self.seconds,
                )
            self.last_refusal = now
        return True


@asynccontextmanager
async def connect(
    url: str,
    *,
    socket_timeout_s: float = DEFAULT_SOCKET_TIMEOUT_S,
    ride_out_s: float | None = None,
    quiet: bool = False,
    health_check_s: int = DEFAULT_HEALTH_CHECK_S,
) -> AsyncIterator[aioredis.Redis]:
    """A connected client for ``url``; ``ServerUnreachable`` if nothing answers there.

    With ``ride_out_s``, a server lost *after* this first answer, or refusing writes for
    memory, is retried for that long (a restart is waited out, see `ride_out_retry`;
    ``quiet`` as there) before a command fails. The first answer itself is not waited
    for: a wrong URL should be one quick, clear error. Retrying is safe because crawlog's
    writes are idempotent: an append carries its event id, an enqueue its fingerprint, and
    the fenced scripts recognise their own last event. Such a long-running writer also
    refuses a server whose ``maxmemory-policy`` evicts keys (``ServerEvicts``, see
    ``_memory``). ``health_check_s`` as in `client_for`.
    """
    client = client_for(url, socket_timeout_s=socket_timeout_s, health_check_s=health_check_s)
    try:
        await ping(client, url)
        if ride_out_s is not None:
            await require_noeviction(client, redacted(url))
            client.set_retry(ride_out_retry(ride_out_s, where=redacted(url), quiet=quiet))
        yield client
    finally:
        await client.aclose()


async def ping(client: aioredis.Redis, url: str) -> None:
    """Raise ``ServerUnreachable`` with a useful message unless the server answers."""
    try:
        await client.ping()
    except redis.exceptions.ResponseError as exc:
        # A server that cannot persist refuses PING too; it is reachable all the same.
        if (refusal := cannot_persist(exc)) is None:
            raise
        raise refusal from None
    except redis.exceptions.AuthenticationError as exc:
        raise ServerUnreachable(
            f"Redis at {redacted(url)} refused the credentials ({exc}): "
            "check the user and password in REDIS_URL"
        ) from None
    except MasterNotFoundError as exc:
        raise ServerUnreachable(
            f"the Sentinels at {redacted(url)} name no primary that answers ({exc}): a "
            "failover may be under way (retry in a few seconds), or the service named in "
            "REDIS_URL is not theirs; `crawlog server status` shows a replica set crawlog runs"
        ) from None
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as exc:
        # redis-py wraps a refusal of its connection set-up (CLIENT SETINFO) as a failed
        # connection: a server that cannot persist is reachable all the same.
        if (refusal := cannot_persist(exc)) is not None:
            raise refusal from None
        raise ServerUnreachable(
            f"cannot reach Redis at {redacted(url)} ({exc}): is the server running? "
            "Check REDIS_URL, or unset it to let crawlog start its own server"
        ) from None


async def answers(url: str, timeout_s: float) -> bool:
    """Whether the server at ``url`` answers a PING within ``timeout_s`` (one try, a fresh
    connection: not a client that rides out a lost server). A refusal is an answer: a
    server that cannot save (``MISCONF``) refuses PING with its writes."""
    with anyio.move_on_after(timeout_s):
        try:
            async with connect(url, socket_timeout_s=timeout_s):
                return True
        except ServerUnreachable:
            return False
        except ServerError:
            return True
    return False


async def script_pipeline(
    client: aioredis.Redis,
    calls: Sequence[tuple[AsyncScript, Sequence[str | bytes], Sequence[str | bytes | int]]],
) -> list[Any]:
    """Run script calls (script, keys, args) in one pipelined round trip, not a transaction.

    A server restarted while the pipeline was in flight has lost its script cache, and
    redis-py loads a pipeline's scripts only before its first attempt: its retry then gets
    NOSCRIPT. The whole pipeline is sent again (the scripts loaded anew); every crawlog
    script is idempotent, so a call that had run already changes nothing the second time.
    """
    for resend in range(_NOSCRIPT_RESENDS + 1):
        async with client.pipeline(transaction=False) as pipe:
            for script, keys, args in calls:
                await script(keys=keys, args=args, client=pipe)
            try:
                return await pipe.execute()
            except redis.exceptions.NoScriptError:
                if resend == _NOSCRIPT_RESENDS:
                    raise
    raise AssertionError("unreachable")


SCRIPT_CONNECTIONS_KEPT = 64
"""Connections a `ScriptCaller` keeps between its calls, at most: one a call in flight at
once (a worker's concurrency); past it, the pool's take and give back their own."""

Key = str | bytes
Arg = str | bytes | int | float


class ScriptCaller:
    """Runs scripts on ``client`` by ``EVALSHA``, as ``script(keys=..., args=...)`` does but
    at half its client CPU, on connections it keeps between calls.

    What redis-py's ``execute_command`` does around a command costs more than the command:
    the pool's lock, its check that a connection taken has nothing left to read, metrics
    recorded through two layers of coroutines, and ``Script.__call__``'s own pass. Kept
    here: the client's retry policy (a lost server ridden out, `ride_out_retry`: the
    connection closed and the call sent again), a script the server no longer knows loaded
    again (``NOSCRIPT``: restarted, or ``SCRIPT FLUSH``), the socket timeout on the reply,
    and errors as redis-py raises them. A connection whose call was cut short (cancelled,
    timed out, lost) may have a reply on its way that nobody will read: it is closed and
    goes back to the pool, which opens it again when it next serves; one that gave a reply
    or an error reply is kept. A kept connection to a primary its pool has since seen
    replaced by a failover is closed before it serves again (`_sentinel.left_behind`).
    """

    __slots__ = ("_client", "_idle")

    def __init__(self, client: aioredis.Redis) -> None:
        self._client = client
        self._idle: list[redis.asyncio.connection.AbstractConnection] = []

    async def __call__(self, script: AsyncScript, keys: Sequence[Key], args: Sequence[Arg]) -> Any:
        """The reply of ``script`` run with ``keys`` and ``args``."""
        idle = self._idle
        pool = self._client.connection_pool
        conn = idle.pop() if idle else await _take(pool)
        try:
            if left_behind(conn, pool):
                await conn.disconnect()  # its reconnect asks the Sentinels
            reply = await conn.retry.call_with_retry(
                lambda: _evalsha(conn, script, keys, args),
                lambda error: conn.disconnect(error=error),
            )
        except redis.exceptions.ResponseError:
            if not self._kept(conn):  # the error was the reply: read whole
                await pool.release(conn)
            raise
        except BaseException:
            # Cut short (cancelled, timed out, lost): its reply may still be on its way, and
            # the pool's check before it serves again could miss it, giving it to the next
            # command (redis-py disconnects too, for the same reason).
            with anyio.CancelScope(shield=True):
                await conn.disconnect(nowait=True)
                await pool.release(conn)
            raise
        if not self._kept(conn):
            await pool.release(conn)
        return reply

    def _kept(self, conn: redis.asyncio.connection.AbstractConnection) -> bool:
        reconnect: Callable[[], bool] = conn.should_reconnect  # redis-py leaves it untyped
        if len(self._idle) < SCRIPT_CONNECTIONS_KEPT and not reconnect():
            self._idle.append(conn)
            return True
        return False


async def _take(
    pool: redis.asyncio.connection.ConnectionPool,
) -> redis.asyncio.connection.AbstractConnection:
    # redis-py leaves get_connection untyped.
    get: Callable[[], Awaitable[redis.asyncio.connection.AbstractConnection]] = pool.get_connection
    return await get()


async def _evalsha(
    conn: redis.asyncio.connection.AbstractConnection,
    script: AsyncScript,
    keys: Sequence[Key],
    args: Sequence[Arg],
) -> Any:
    # SCRIPT LOAD and the EVALSHA after it go on one connection, so to one server (not
    # redis-py's reload, which a failover between them can split: `_sentinel`); loaded
    # again as often as a flush between them takes, as there.
    for reload in range(_NOSCRIPT_RESENDS + 1):
        try:
            await conn.send_command("EVALSHA", script.sha, len(keys), *keys, *args)
            return await conn.read_response()
        except redis.exceptions.NoScriptError:
            if reload == _NOSCRIPT_RESENDS:
                raise
            await conn.send_command("SCRIPT", "LOAD", script.script)
            sha = await conn.read_response()
            script.sha = sha.decode() if isinstance(sha, bytes) else str(sha)
    raise AssertionError("unreachable")


async def command(client: aioredis.Redis, *args: str | bytes | int) -> Any:
    """Run a raw command; its reply comes back unparsed for the stream commands."""
    # redis-py leaves execute_command untyped: its reply depends on the command.
    execute: Callable[..., Awaitable[Any]] = client.execute_command
    return await execute(*args)


class InFlight(Generic[T]):
    """A command sent now (at the caller's next checkpoint) whose reply is taken later:
    the server works on it while the caller does something else."""

    def __init__(self, tasks: TaskGroup, call: Awaitable[T]) -> None:
        self._done = anyio.Event()
        self._reply: tuple[T] | None = None
        self._error: Exception | None = None
        tasks.start_soon(self._wait, call)

    async def _wait(self, call: Awaitable[T]) -> None:
        try:
            self._reply = (await call,)
        except Exception as exc:  # raised again where the reply is taken
            self._error = exc
        finally:
            self._done.set()

    async def result(self) -> T:
        """The reply, or what the command raised."""
        await self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._reply is not None  # set when no error was
        return self._reply[0]


def redis_errors(what: str) -> RedisErrors:
    """Translate redis-py errors raised while doing ``what`` into crawlog's."""
    return RedisErrors(what)


class RedisErrors:
    """`redis_errors`'s context: a class, not a generator, since it wraps every call to the
    store (a generator-based context costs a few µs more a call)."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, trace: object) -> Literal[False]:
        leaf = exc
        if isinstance(exc, ExceptionGroup):
            # A call raced in a task group (a write against the store going down): its one
            # error is translated here too, not left for the command line to find.
            leaves = exc.exceptions
            if len(leaves) != 1 or not isinstance(leaves[0], redis.exceptions.RedisError):
                return False
            leaf = leaves[0]
            leaf.__cause__ = exc
        if not isinstance(leaf, redis.exceptions.RedisError):
            return False
        translated = _translated(leaf, self.what)
        if translated is not None:
            raise translated from leaf
        if leaf is exc:
            return False  # another redis-py error: as it is
        raise leaf


def _translated(exc: redis.exceptions.RedisError, what: str) -> Exception | None:
    if isinstance(exc, (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)):
        return ServerUnreachable(
            f"lost the Redis server while {what} ({exc}): check that it is running; "
            "nothing half-written is left behind, so the same command can be run again"
        )
    if isinstance(exc, redis.exceptions.OutOfMemoryError):
        return ServerOutOfMemory(
            f"Redis refused {what}: it is out of memory (maxmemory reached). Raise its "
            "maxmemory (CONFIG SET maxmemory) or free memory on it, then run the same "
            "command again; nothing half-written is left behind"
        )
    if isinstance(exc, redis.exceptions.ResponseError):
        if (refusal := cannot_persist(exc)) is not None:
            return refusal
        if (lost := group_lost(exc, what)) is not None:
            return lost
        return ServerError(f"Redis refused {what}: {exc}")
    return None


_NOGROUP = "NOGROUP"
_JOB_OF_NOGROUP = re.compile(r"crawlog:\{([^}:]+)")


def group_lost(exc: BaseException, what: str) -> StoreLost | None:
    """``StoreLost`` for the server's ``NOGROUP`` (a task lane or its consumer group is
    gone: the store lost the job's keys), None for another error."""
    text = str(exc)
    if _NOGROUP not in text:
        return None
    found = _JOB_OF_NOGROUP.search(text)
    job = found[1] if found else "?"
    return StoreLost(job, f"its task lanes' consumer group is gone while {what}")


def cannot_persist(exc: BaseException, *, where: str | None = None) -> ServerCannotPersist | None:
    """``ServerCannotPersist`` for the server's ``MISCONF`` refusal, None for another error.

    ``where`` names the disk for the user ("the data directory /srv/crawls"); without it
    the message speaks of the Redis server's data directory.
    """
    # In a pipeline redis-py wraps the server's words: "Command # 1 (...) caused error: ...".
    text = str(exc)
    start = text.find(f"{_MISCONF} ")
    if start < 0:
        return None
    # Inside a script the server appends "script: SHA, on @user_script:N.": not the user's.
    detail = text[start + len(_MISCONF) :].split(" script: ")[0].strip().rstrip("\"',)")
    return persist_error(detail, where=where)


def cannot_persist_because(*, disk_full: bool, where: str | None = None) -> ServerCannotPersist:
    """The error for a server known to have refused writes, its own words no longer at hand."""
    detail = f"Errors writing to disk{': ' + _NO_SPACE if disk_full else ''}"
    return persist_error(detail, where=where)


def persist_error(detail: str, *, where: str | None = None) -> ServerCannotPersist:
    """The error, in plain words, for a server that said ``MISCONF <detail>``."""
    where = where or "the Redis server's data directory"
    if _NO_SPACE in detail:
        message = (
            f"the disk of {where} is full: the server cannot write its append-only file, so "
            "it refuses every write. Nothing written before is lost: free some space on that "
            "disk (see `df -h`), then run the same command again to carry on"
        )
    else:
        message = (
            f"the Redis server cannot save to disk ({detail}), so it refuses every write: "
            f"fix what its log says (crawlog's own server: valkey.log in {where}), then run "
            "the same command again; nothing written before is lost"
        )
    return ServerCannotPersist(message, detail, disk_full=_NO_SPACE in detail)
