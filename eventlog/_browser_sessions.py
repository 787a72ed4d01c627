"""Browser login state kept outside the browser (``crawl --browser`` with a spider that
logs in): one versioned object per identity, shared by every worker of the job.

A session is what a site keeps in a browser to know its user — cookies, and
``localStorage`` and ``sessionStorage`` per origin (Playwright's ``storageState`` leaves
the last out) — with the identity it is bound to (user agent, proxy): a site that ties a
token to them would refuse it under another. Each save is one script
(``BROWSER_SESSION_SAVE``) that replaces the whole state and bumps the version together,
only if the writer's copy was the current version: a save cut short (its worker killed
while sending it) never reaches the server as half a state, so the old version stays whole
and readable, and a worker whose copy is stale learns it instead of overwriting a newer
login blindly.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple
from urllib.parse import urlsplit

import msgspec
import redis.asyncio as aioredis

from eventlog._connection import redis_errors
from eventlog._keys import (
    BROWSER_SESSION_SAVED_AT,
    BROWSER_SESSION_STATE,
    BROWSER_SESSION_VERSION,
    JobKeys,
)
from eventlog._scripts import BROWSER_SESSION_SAVE

NO_SESSION_VERSION = 0
"""The version of an identity nothing was saved for (no login yet)."""


class SessionIdentity(msgspec.Struct, frozen=True, kw_only=True):
    """What a login is bound to: the browser's user agent and the proxy it goes through."""

    user_agent: str
    proxy: str = ""

    @property
    def key(self) -> str:
        """The identity's name in the store: a digest of its fields."""
        raw = msgspec.msgpack.encode(self)
        return hashlib.blake2b(raw, digest_size=8).hexdigest()


class BrowserCookie(msgspec.Struct, frozen=True, kw_only=True):
    """One cookie as the browser reports it (Playwright's ``context.cookies()``)."""

    name: str
    value: str
    domain: str
    path: str = "/"
    expires: float = -1
    """Seconds since the epoch; -1 for a session cookie."""
    http_only: bool = False
    secure: bool = False
    same_site: str = "Lax"


class OriginStorage(msgspec.Struct, frozen=True, kw_only=True):
    """What pages of one origin (``scheme://host[:port]``) stored in the browser."""

    local: dict[str, str] = {}
    session: dict[str, str] = {}


class SessionState(msgspec.Struct, frozen=True, kw_only=True):
    """A whole login state: its identity, the browser's cookies, storage by origin."""

    identity: SessionIdentity
    cookies: tuple[BrowserCookie, ...] = ()
    origins: dict[str, OriginStorage] = {}


class StoredSession(NamedTuple):
    """What `BrowserSessionStore.read` answers."""

    version: int
    state: SessionState | None
    """None before the first save."""


class KeptSession(NamedTuple):
    """One identity's session as `BrowserSessionStore.kept` lists it."""

    key: str
    """The identity's key (`SessionIdentity.key`)."""
    version: int
    saved_at_ms: int | None
    """The server's clock at its last save; None for a session saved before it was kept."""
    state: SessionState


class SessionSave(NamedTuple):
    """What `BrowserSessionStore.save` answers."""

    version: int
    """The version after the call: the new one if saved, else the current one."""
    saved: bool
    """False when the writer's copy was not the current version (nothing written)."""


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(SessionState)


class BrowserSessionStore:
    """The browser sessions of one job, one per `SessionIdentity`."""

    def __init__(self, redis: aioredis.Redis, keys: JobKeys) -> None:
        self.redis = redis
        self.keys = keys
        self._save = redis.register_script(BROWSER_SESSION_SAVE)

    async def read(self, identity: SessionIdentity) -> StoredSession:
        """The current version of ``identity``'s session and its state."""
        key = self.keys.browser_session(identity.key)
        with redis_errors("reading a browser session"):
            version, state = await self.redis.hmget(
                key, [BROWSER_SESSION_VERSION, BROWSER_SESSION_STATE]
            )
        if version is None or state is None:
            return StoredSession(NO_SESSION_VERSION, None)
        raw = state if isinstance(state, bytes) else state.encode()
        return StoredSession(int(version), _decoder.decode(raw))

    async def save(self, state: SessionState, known: int) -> SessionSave:
        """Replace the session of ``state``'s identity by ``state`` as its next version, if
        ``known`` (the version the writer's copy is of) is still the current one."""
        keys = [self.keys.browser_sessions, self.keys.browser_session(state.identity.key)]
        args: list[str | int | bytes] = [state.identity.key, known, _encoder.encode(state)]
        with redis_errors("saving a browser session"):
            version, saved = await self._save(keys=keys, args=args)
        return SessionSave(int(version), bool(saved))

    async def kept(self) -> list[KeptSession]:
        """Every identity's session, by identity key."""
        found = []
        for key in await self.identities():
            with redis_errors("reading a browser session"):
                version, state, saved_at = await self.redis.hmget(
                    self.keys.browser_session(key),
                    [BROWSER_SESSION_VERSION, BROWSER_SESSION_STATE, BROWSER_SESSION_SAVED_AT],
                )
            if version is None or state is None:
                continue
            raw = state if isinstance(state, bytes) else state.encode()
            stamp = int(saved_at) if saved_at is not None else None
            found.append(KeptSession(key, int(version), stamp, _decoder.decode(raw)))
        return found

    async def clear_origin(self, origin: str) -> list[KeptSession]:
        """Drop ``origin``'s storage and the cookies its host is sent from every session
        that holds any (each as its next version, so a worker starting afterwards logs in
        again there); the sessions as they were before, of those changed."""
        cleared = []
        for kept in await self.kept():
            state = kept.state
            while (smaller := without_origin(state, origin)) != state:
                answer = await self.save(smaller, kept.version)
                if answer.saved:
                    cleared.append(kept)
                    break
                # Saved meanwhile by a worker: clear what that version holds.
                stored = await self.read(state.identity)
                if stored.state is None:
                    break
                kept = kept._replace(version=stored.version, state=stored.state)
                state = stored.state
        return cleared

    async def identities(self) -> list[str]:
        """The keys of the identities that have a session, sorted."""
        with redis_errors("listing the browser sessions"):
            members = await self.redis.smembers(self.keys.browser_sessions)
        return sorted(m.decode() if isinstance(m, bytes) else str(m) for m in members)


def encode_session(state: SessionState) -> bytes:
    """A session state as the store keeps it."""
    return _encoder.encode(state)


def origin_of(url: str) -> str:
    """The origin (``scheme://host[:port]``) of ``url``, as a page's ``location.origin``."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def cookie_sent_to(cookie: BrowserCookie, origin: str) -> bool:
    """Whether a browser sends ``cookie`` to pages of ``origin`` (its domain is the origin's
    host or, for a domain cookie, a parent of it)."""
    host = (urlsplit(origin).hostname or "").lower()
    domain = cookie.domain.lower()
    if domain.startswith("."):
        return host == domain[1:] or host.endswith(domain)
    return host == domain


def without_origin(state: SessionState, origin: str) -> SessionState:
    """``state`` without what it keeps for ``origin``: its storage, and the cookies sent
    to it."""
    origin = origin_of(origin)
    return SessionState(
        identity=state.identity,
        cookies=tuple(c for c in state.cookies if not cookie_sent_to(c, origin)),
        origins={o: kept for o, kept in state.origins.items() if origin_of(o) != origin},
    )
