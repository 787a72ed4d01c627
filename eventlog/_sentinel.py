"""Reaching a primary through Sentinel: ``redis+sentinel://`` URLs.

``redis+sentinel://[:password@]host:port[,host:port...]/service`` names the Sentinels that
watch ``service`` (the name given to ``sentinel monitor``); the password, if any, is the one
both the Sentinels and the data servers ask for (crawlog's replica set uses one for all).

What redis-py's asyncio Sentinel client does, which crawlog relies on:

* every new connection of the pool asks the Sentinels for the primary's address first
  (``SentinelManagedConnection`` → ``SentinelConnectionPool.get_master_address``), and a new
  address drops the pool's idle connections;
* a command whose connection breaks (the primary killed) raises ``ConnectionError``; a
  primary that was demoted answers ``READONLY``, which the client turns into a
  ``ConnectionError`` too; while the Sentinels agree on no primary (between the old one's
  death and the promotion) each connect raises ``MasterNotFoundError``, a
  ``ConnectionError`` as well. So the ride-out retry of `eventlog._connection.connect`
  covers a failover as it covers a restart: the command is sent again on a fresh connection,
  to whichever server the Sentinels name by then. A command in flight when the primary died
  may have run there or not: crawlog's writes are idempotent, so it is simply sent again.
* but a command *retried* on its connection reconnects to the address that connection had
  (redis-py's ``connect_check_health`` calls ``_connect``, which does not ask the
  Sentinels: redis/redis-py#3874, open), so a retry would knock at the dead primary until
  its budget ran out. `FollowingConnection` asks the Sentinels on every connect.
* a promoted replica has none of the scripts: redis-py's scripts load themselves again on
  NOSCRIPT, once; `_ReloadingScript` does it as often as it takes.
* the pool connections' retry is not used for the Sentinels themselves: a Sentinel that
  does not answer is skipped and the next one asked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn
from urllib.parse import unquote, urlsplit

import anyio
import redis.asyncio as aioredis
import redis.exceptions
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool, SentinelManagedConnection
from redis.commands.core import AsyncScript

from eventlog._exceptions import ConfigError

SENTINEL_SCHEME = "redis+sentinel"
DEFAULT_SENTINEL_PORT = 26379
_NOSCRIPT_RELOADS = 3
WATCH_PRIMARY_EVERY_S = 1.0
_WATCH_TIMEOUT_S = 1.0


@dataclass(frozen=True, slots=True)
class SentinelURL:
    """A parsed ``redis+sentinel://`` URL."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    password: str | None = field(default=None, repr=False)


def is_sentinel_url(url: str) -> bool:
    """Whether ``url`` is a ``redis+sentinel://`` URL."""
    return urlsplit(url).scheme == SENTINEL_SCHEME


def sentinel_url(
    sentinels: list[tuple[str, int]] | tuple[tuple[str, int], ...],
    service: str,
    password: str | None = None,
) -> str:
    """The ``redis+sentinel://`` URL of these Sentinels and service."""
    hosts = ",".join(f"{host}:{port}" for host, port in sentinels)
    auth = f":{password}@" if password else ""
    return f"{SENTINEL_SCHEME}://{auth}{hosts}/{service}"


def parse_sentinel_url(url: str) -> SentinelURL:
    """The Sentinels, service and password of ``url``; ``ConfigError`` if it is malformed."""
    parts = urlsplit(url)
    if parts.scheme != SENTINEL_SCHEME:
        raise ConfigError(f"not a {SENTINEL_SCHEME}:// URL")
    netloc = parts.netloc
    password: str | None = None
    if "@" in netloc:
        auth, netloc = netloc.rsplit("@", 1)
        # ``[user]:password``: the user part is not used, Sentinel's AUTH takes a password.
        password = unquote(auth.split(":", 1)[1]) if ":" in auth else unquote(auth)
        password = password or None
    service = parts.path.strip("/")
    if not service or "/" in service:
        raise ConfigError(
            f"the Sentinel URL names no service: write {SENTINEL_SCHEME}://host:port/SERVICE "
            "(the name the Sentinels monitor)"
        )
    sentinels: list[tuple[str, int]] = []
    for spec in netloc.split(","):
        host, sep, port = spec.strip().rpartition(":")
        if not sep:
            host, port = spec.strip(), str(DEFAULT_SENTINEL_PORT)
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(
                f"bad Sentinel address {spec!r}: write host:port, several separated by commas"
            )
        sentinels.append((host.strip("[]"), int(port)))
    return SentinelURL(tuple(sentinels), unquote(service), password)


class FollowingConnection(SentinelManagedConnection):
    """A connection to the primary that asks the Sentinels where it is on every connect,
    a reconnect by a retried command included (see the module's docstring)."""

    async def _connect(self) -> None:
        if self.connection_pool.is_master:
            self.host, self.port = await self.connection_pool.get_master_address()
        await super()._connect()  # type: ignore[no-untyped-call]


def left_behind(connection: Any, pool: Any) -> bool:
    """Whether ``connection`` is still connected to a primary its pool has since learned
    (from the Sentinels, on another connection's connect) is no longer the one.

    redis-py drops such connections only while they idle in the pool; one a caller keeps
    out of it (`eventlog._connection.ScriptCaller`) would go on writing to the old primary,
    still up after a failover that did not kill it (the Sentinels turn it into a replica
    only when they next look at it), and what it wrote there would be lost."""
    address = getattr(pool, "master_address", None)
    return (
        address is not None
        and connection.is_connected
        and (connection.host, connection.port) != address
    )


class _ReloadingScript(AsyncScript):
    """A script that is loaded again as often as it meets NOSCRIPT, not once: redis-py's
    own reload (``SCRIPT LOAD``, then ``EVALSHA``) can land on two servers when a failover
    (or a fail-back to a replica whose full sync emptied its script cache) comes between."""

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        for reload in range(_NOSCRIPT_RELOADS + 1):
            try:
                return await super().__call__(*args, **kwargs)
            except redis.exceptions.NoScriptError:
                if reload == _NOSCRIPT_RELOADS:
                    raise
        raise AssertionError("unreachable")


class _PrimaryClient(aioredis.Redis):
    """The client of the primary the Sentinels name: its scripts reload on NOSCRIPT."""

    def register_script(self, script: str | bytes) -> AsyncScript:  # type: ignore[override]
        return _ReloadingScript(self, script)


class _PoolClosingItsSentinels(SentinelConnectionPool):
    """A pool whose full disconnect (the client's ``aclose``) closes the connections to
    the Sentinels too: redis-py leaves them to the `Sentinel` object, which no one else
    holds here."""

    async def disconnect(self, inuse_connections: bool = True) -> None:
        await super().disconnect(inuse_connections)
        if inuse_connections:
            for sentinel in self.sentinel_manager.sentinels:
                await sentinel.connection_pool.disconnect()


def sentinel_client(url: str, **connection_kwargs: Any) -> aioredis.Redis:
    """A client of the primary the Sentinels of ``url`` name, not yet connected.

    ``connection_kwargs`` go to the primary's connections (timeouts, protocol, health
    check); the Sentinels themselves are asked with the same timeouts and password.
    """
    parsed = parse_sentinel_url(url)
    timeouts = {k: v for k, v in connection_kwargs.items() if k.startswith("socket_")}
    sentinel = Sentinel(
        list(parsed.sentinels),
        sentinel_kwargs={**timeouts, "password": parsed.password},
        password=parsed.password,
        **connection_kwargs,
    )
    client: aioredis.Redis = sentinel.master_for(
        parsed.service,
        redis_class=_PrimaryClient,
        connection_pool_class=_PoolClosingItsSentinels,
        connection_class=FollowingConnection,
    )
    return client


def failover_line(old: tuple[str, int], new: tuple[str, int]) -> str:
    """The one line that says the Sentinels promoted ``new`` in place of ``old``."""
    return (
        f"failover: the Sentinels promoted {new[0]}:{new[1]} to primary in place of "
        f"{old[0]}:{old[1]}; workers and projector follow it"
    )


async def watch_primary(
    url: str, say: Callable[[str], None], *, every_s: float = WATCH_PRIMARY_EVERY_S
) -> NoReturn:
    """Ask the Sentinels of ``url`` where the primary is every ``every_s``, and tell ``say``
    (`failover_line`) when it moved; runs until cancelled. Sentinels that do not answer, or
    agree on no primary (mid-failover), are asked again at the next turn."""
    parsed = parse_sentinel_url(url)
    sentinels = Sentinel(
        list(parsed.sentinels),
        sentinel_kwargs={
            "password": parsed.password,
            "socket_timeout": _WATCH_TIMEOUT_S,
            "socket_connect_timeout": _WATCH_TIMEOUT_S,
        },
    )
    primary: tuple[str, int] | None = None
    try:
        while True:
            try:
                host, port = await sentinels.discover_master(parsed.service)
            except redis.exceptions.ConnectionError:  # MasterNotFoundError among them
                pass
            else:
                now = (str(host), int(port))
                if primary is not None and now != primary:
                    say(failover_line(primary, now))
                primary = now
            await anyio.sleep(every_s)
    finally:
        with anyio.CancelScope(shield=True):
            await sentinels.aclose()
