"""Cookies for a crawl that asks for them (``--cookies``): one jar per site, shared by every
worker through the job's `CookieStore`, so that a session opened by one worker (a login)
serves the requests of all of them, a task resumed elsewhere after a kill included.

Cookies are parsed, matched and expired by the standard library's ``http.cookiejar``
(through httpx's adapter, ``httpx.Cookies``): ``Set-Cookie`` with its attributes
(``Expires``/``Max-Age``, ``Path``, ``Domain``, ``Secure``, ``HttpOnly``), and on each
request the cookies its URL may carry. It was chosen over aiohttp's ``CookieJar`` because
its ``Cookie`` is a plain record whose expiry is absolute — stored field by field
(`StoredCookie`) it means the same to every worker — whereas aiohttp keeps expiry apart
from its cookies and persists a jar only whole (pickle or a file).

Each worker keeps a copy of every jar it uses, with the jar's version: before each request
it asks the server whether the version changed (one round trip, the jar sent back only if
it did); a response's cookies go to the server in one step that bumps the version. A jar
is the site's (``scheme://host[:port]``) of the URL being requested, redirect hops
included: the cookies a redirect sets (a login's 303) are sent by the next hop.
"""

from __future__ import annotations

from http.cookiejar import Cookie, CookieJar
from typing import cast

import httpx

from crawler._urls import site_of
from eventlog import EMPTY_JAR_VERSION, NO_JAR_VERSION, CookieStore, StoredCookie, cookie_field

SET_COOKIE = "set-cookie"


def stored(cookie: Cookie) -> StoredCookie:
    """``cookie`` as a jar in Redis keeps it."""
    return StoredCookie(
        name=cookie.name,
        value=cookie.value,
        domain=cookie.domain,
        path=cookie.path,
        version=cookie.version,
        port=cookie.port,
        port_specified=cookie.port_specified,
        domain_specified=cookie.domain_specified,
        domain_initial_dot=cookie.domain_initial_dot,
        path_specified=cookie.path_specified,
        secure=cookie.secure,
        expires=cookie.expires,
        discard=cookie.discard,
        comment=cookie.comment,
        comment_url=cookie.comment_url,
        # The library has no public reader of all of a cookie's other attributes.
        rest=dict(cookie._rest),  # type: ignore[attr-defined]
        rfc2109=cookie.rfc2109,
    )


def restored(cookie: StoredCookie) -> Cookie:
    """The library's ``Cookie`` for one kept in Redis (`stored`)."""
    return Cookie(
        cookie.version,
        cookie.name,
        cookie.value,
        cookie.port,
        cookie.port_specified,
        cookie.domain,
        cookie.domain_specified,
        cookie.domain_initial_dot,
        cookie.path,
        cookie.path_specified,
        cookie.secure,
        cookie.expires,
        cookie.discard,
        cookie.comment,
        cookie.comment_url,
        # A flag attribute (HttpOnly) has the value None, whatever typeshed says.
        cast("dict[str, str]", dict(cookie.rest)),
        cookie.rfc2109,
    )


class _RecordingJar(CookieJar):
    """A jar that, while ``changes`` is a dict, records there each cookie the library sets
    (field -> cookie) or deletes (field -> None), whether or not this copy had it: a
    response's changes are what it says, not a difference from a copy that may be stale."""

    def __init__(self) -> None:
        super().__init__()
        self.changes: dict[str, Cookie | None] | None = None

    def set_cookie(self, cookie: Cookie) -> None:
        super().set_cookie(cookie)
        if self.changes is not None:
            self.changes[cookie_field(cookie.domain, cookie.path, cookie.name)] = cookie

    def clear(
        self, domain: str | None = None, path: str | None = None, name: str | None = None
    ) -> None:
        # The library deletes a cookie a response expires with clear(domain, path, name),
        # which raises KeyError when this copy has no such cookie: recorded first.
        if self.changes is not None and None not in (domain, path, name):
            self.changes[cookie_field(str(domain), str(path), str(name))] = None
        super().clear(domain, path, name)


class _Copy:
    """This worker's copy of one site's jar, and the version it is a copy of."""

    __slots__ = ("cookies", "jar", "version")

    def __init__(self) -> None:
        self.jar = _RecordingJar()
        self.cookies = httpx.Cookies(self.jar)
        self.version = EMPTY_JAR_VERSION  # an empty copy is the jar nobody wrote to

    def load(self, version: int, cookies: list[StoredCookie]) -> None:
        jar = _RecordingJar()
        for cookie in cookies:
            jar.set_cookie(restored(cookie))
        self.jar, self.cookies, self.version = jar, httpx.Cookies(jar), version

    def extract(self, response: httpx.Response) -> dict[str, Cookie | None]:
        """Apply the cookies ``response`` sets; what they set and delete, by field."""
        jar = self.jar
        jar.changes = {}
        try:
            self.cookies.extract_cookies(response)
            return jar.changes
        finally:
            jar.changes = None


class SharedCookies:
    """The fetcher's cookie hook for a job's shared jars: `add_to` each request, `keep_from`
    each response (every redirect hop's too)."""

    def __init__(self, store: CookieStore) -> None:
        self.store = store
        self._copies: dict[str, _Copy] = {}

    async def add_to(self, request: httpx.Request) -> None:
        """Give ``request`` the ``Cookie`` header its site's jar has for its URL (none if
        the request has one already)."""
        copy = await self._current(site_of(str(request.url)))
        copy.cookies.set_cookie_header(request)

    async def keep_from(self, response: httpx.Response) -> None:
        """Keep the cookies ``response`` sets (and drop those it expires) in its site's
        jar, for every worker."""
        if SET_COOKIE not in response.headers:
            return
        site = site_of(str(response.request.url))
        copy = self._copies.get(site) or await self._current(site)
        known = copy.version
        changes = copy.extract(response)
        if not changes:
            return  # none the library accepts (e.g. a Domain the host is not in)
        kept = [stored(c) for c in changes.values() if c is not None]
        dropped = [field for field, c in changes.items() if c is None]
        written = await self.store.write(site, known, kept, dropped)
        if not written.current:
            # Another worker changed the jar meanwhile: ours lacks that, read it whole.
            copy.version = NO_JAR_VERSION
        elif copy.version == known:
            copy.version = written.version
        # Else the copy was read again while this wrote: it has this change or is stale.

    async def _current(self, site: str) -> _Copy:
        copy = self._copies.get(site)
        if copy is None:
            copy = self._copies[site] = _Copy()
        known = copy.version
        answer = await self.store.read(site, known)
        if answer.cookies is not None and copy.version == known:
            copy.load(answer.version, answer.cookies)
        return copy
