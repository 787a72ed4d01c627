"""The cookie jars of a job (``--cookies``): one per site, shared by every worker.

What a jar holds is a set of :class:`StoredCookie`, each under its `cookie_field`; every
change bumps the jar's version, in the same script (``COOKIES_WRITE``). A worker keeps a
copy of each jar it uses and asks for the jar again only when the version differs from its
copy's (``COOKIES_READ``: one round trip that answers "unchanged" or the whole jar), so a
cookie set through one worker is sent by the next request of any other.

The cookies themselves are parsed, matched and expired by a cookie library in ``crawler``:
here they are only fields to keep. ``expires`` is absolute (seconds since the epoch), so a
``Max-Age`` means the same moment to every worker that reads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import msgspec
import redis.asyncio as aioredis

from eventlog._connection import redis_errors
from eventlog._keys import JobKeys, cookie_field
from eventlog._scripts import COOKIES_CLEAR, COOKIES_READ, COOKIES_WRITE

NO_JAR_VERSION = -1
"""The version of a copy that must be read again (no jar has it)."""
EMPTY_JAR_VERSION = 0
"""The version of a jar nothing was written to: a new copy, empty, is current."""
_DELETED = b""
"""A field's value in ``COOKIES_WRITE`` that deletes it."""


class StoredCookie(msgspec.Struct, frozen=True, kw_only=True):
    """One cookie as a jar keeps it: the fields of the standard library's
    ``http.cookiejar.Cookie``, one for one."""

    name: str
    value: str | None
    domain: str
    path: str
    version: int | None = 0
    port: str | None = None
    port_specified: bool = False
    domain_specified: bool = False
    domain_initial_dot: bool = False
    path_specified: bool = False
    secure: bool = False
    expires: int | None = None
    """Seconds since the epoch; None for a session cookie (kept for the whole crawl)."""
    discard: bool = True
    comment: str | None = None
    comment_url: str | None = None
    rest: dict[str, str | None] = {}
    """Attributes beyond the standard ones, e.g. ``{"HttpOnly": None}``."""
    rfc2109: bool = False

    @property
    def field(self) -> str:
        """Its field in the jar (`cookie_field`)."""
        return cookie_field(self.domain, self.path, self.name)


class JarCopy(NamedTuple):
    """What `CookieStore.read` answers."""

    version: int
    cookies: list[StoredCookie] | None
    """The whole jar; None when the copy asked about is current."""


class JarWrite(NamedTuple):
    """What `CookieStore.write` answers."""

    version: int
    """The jar's version after the change."""
    current: bool
    """Whether the writer's copy was current before it: if so the copy with the change
    applied is the jar at ``version``; if not, another worker changed the jar meanwhile
    and the copy must be read again."""


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(StoredCookie)


def encode_cookie(cookie: StoredCookie) -> bytes:
    """A cookie as its jar's hash holds it."""
    return _encoder.encode(cookie)


def decode_cookie(data: bytes) -> StoredCookie:
    """A cookie from its jar's hash (`encode_cookie`)."""
    return _decoder.decode(data)


class CookieStore:
    """The cookie jars of one job (or partition), by site (``scheme://host[:port]``)."""

    def __init__(self, redis: aioredis.Redis, keys: JobKeys) -> None:
        self.redis = redis
        self.keys = keys
        self._read = redis.register_script(COOKIES_READ)
        self._write = redis.register_script(COOKIES_WRITE)
        self._clear = redis.register_script(COOKIES_CLEAR)

    async def read(self, site: str, known: int = NO_JAR_VERSION) -> JarCopy:
        """``site``'s jar, unless ``known`` is its version (then ``cookies`` is None)."""
        keys = [self.keys.cookie_version(site), self.keys.cookie_jar(site)]
        with redis_errors("reading a cookie jar"):
            reply = await self._read(keys=keys, args=[known])
        version = int(reply[0])
        if len(reply) == 1 and version == known:
            return JarCopy(version, None)
        return JarCopy(version, [decode_cookie(value) for value in reply[2::2]])

    async def write(
        self,
        site: str,
        known: int,
        kept: Iterable[StoredCookie] = (),
        dropped: Iterable[str] = (),
    ) -> JarWrite:
        """Keep the cookies ``kept`` (each replacing its field's) and delete the fields
        ``dropped`` in ``site``'s jar, its version bumped in the same step; ``known`` is
        the version of the writer's copy."""
        args: list[str | int | bytes] = [site, known]
        for cookie in kept:
            args += [cookie.field, encode_cookie(cookie)]
        for field in dropped:
            args += [field, _DELETED]
        keys = [
            self.keys.cookie_sites,
            self.keys.cookie_jar(site),
            self.keys.cookie_version(site),
        ]
        with redis_errors("writing a cookie jar"):
            version, current = await self._write(keys=keys, args=args)
        return JarWrite(int(version), bool(current))

    async def sites(self) -> list[str]:
        """The sites that have a jar, sorted."""
        with redis_errors("listing the cookie jars"):
            members = await self.redis.smembers(self.keys.cookie_sites)
        return sorted(m.decode() if isinstance(m, bytes) else str(m) for m in members)

    async def cookies(self, site: str) -> list[StoredCookie]:
        """Every cookie of ``site``'s jar (expired ones included), by field."""
        jar = await self.read(site)
        return sorted(jar.cookies or (), key=lambda cookie: cookie.field)

    async def clear(self, sites: Sequence[str]) -> int:
        """Empty the jars of ``sites``; how many cookies were dropped."""
        dropped = 0
        with redis_errors("clearing a cookie jar"):
            for site in sites:
                keys = [
                    self.keys.cookie_sites,
                    self.keys.cookie_jar(site),
                    self.keys.cookie_version(site),
                ]
                dropped += int(await self._clear(keys=keys, args=[site]))
        return dropped
