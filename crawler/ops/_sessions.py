"""A browser crawl's stored logins as an operator reads and clears them (``crawlog
sessions``): a row per identity and origin, with how much it keeps — never a value unless
asked, a session token being a secret.

Clearing an origin drops its storage and the cookies sent to it from every identity's
session, each as a new version (`eventlog.BrowserSessionStore.clear_origin`): the next
worker to start logs in there again. A running worker keeps the login its browser holds
and saves it back at its next changed page, so a clear is refused while workers of the
job are alive.
"""

from __future__ import annotations

from typing import Any

import msgspec

from crawler.ops._job import OpenJob
from eventlog import (
    BrowserSessionStore,
    ConfigError,
    KeptSession,
    OperatorRefused,
    cookie_sent_to,
    holders_after_lapse,
    origin_of,
)


class SessionRow(msgspec.Struct, frozen=True, kw_only=True):
    """What one identity's session keeps for one origin."""

    identity: str
    user_agent: str
    proxy: str
    version: int
    saved_at_ms: int | None
    origin: str
    cookies: int
    local_storage: int
    session_storage: int
    values: dict[str, Any] | None = None
    """Its cookies and storage, values and all: only when asked."""


def session_rows(kept: list[KeptSession], *, values: bool = False) -> list[SessionRow]:
    """A row per identity and origin its session keeps storage for, plus one per cookie
    domain sent to none of them; cookies counted where a browser would send them."""
    rows = []
    for session in kept:
        state = session.state
        places = {o: o for o in state.origins}
        for cookie in state.cookies:
            if not any(cookie_sent_to(cookie, o) for o in state.origins):
                places.setdefault(cookie.domain, f"http://{cookie.domain.lstrip('.')}")
        for place in sorted(places):
            storage = state.origins.get(place)
            jar = [c for c in state.cookies if cookie_sent_to(c, places[place])]
            shown = None
            if values:
                shown = {
                    "cookies": {c.name: c.value for c in jar},
                    "local_storage": dict(storage.local) if storage else {},
                    "session_storage": dict(storage.session) if storage else {},
                }
            rows.append(
                SessionRow(
                    identity=session.key,
                    user_agent=state.identity.user_agent,
                    proxy=state.identity.proxy,
                    version=session.version,
                    saved_at_ms=session.saved_at_ms,
                    origin=place,
                    cookies=len(jar),
                    local_storage=len(storage.local) if storage else 0,
                    session_storage=len(storage.session) if storage else 0,
                    values=shown,
                )
            )
    return rows


def origin_in(given: str, rows: list[SessionRow]) -> str:
    """The origin the operator means by ``given`` (an origin, a URL or a bare
    HOST[:PORT]) among those ``rows`` keep; ``ConfigError`` if none or several."""
    known = sorted({r.origin for r in rows})
    if "://" in given:
        wanted = origin_of(given)
        matches = [o for o in known if o == wanted]
    else:
        bare = given.lower().rstrip("/")
        matches = [o for o in known if o.split("://", 1)[-1] == bare or o == bare]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ConfigError(f"{given!r} matches {', '.join(matches)}: give one of them")
    listed = ", ".join(known[:10]) or "none"
    raise ConfigError(f"no browser session keeps {given!r} (origins kept: {listed})")


async def clear_session_origin(job: OpenJob, origin: str) -> list[KeptSession]:
    """Clear ``origin`` (as `origin_in` found it) from every session of the job; the
    sessions it was cleared from. Refused while workers of the job are alive."""
    if holders := await holders_after_lapse(job.client, job.keys):
        raise OperatorRefused(
            f"workers of job {job.keys.job!r} are alive ({', '.join(holders)}) and would save "
            "their browser's login back: stop them, then clear"
        )
    where = origin if "://" in origin else f"http://{origin.lstrip('.')}"
    return await BrowserSessionStore(job.client, job.keys).clear_origin(where)
