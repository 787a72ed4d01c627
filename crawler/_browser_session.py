"""A browser crawl's login, kept outside the browser (`eventlog.BrowserSessionStore`).

A spider that declares ``is_logged_in(page)`` and ``log_in(page)`` (async, on Playwright's
page) gets one `BrowserSession` per worker, for the identity the worker browses as (its
user agent and proxy). It is loaded from the store when the worker starts, so a worker that
takes over after a kill -9 browses logged in from its first page: every browser context
opens with its cookies, and every page of it, before any script of the site runs, with its
``localStorage`` and ``sessionStorage`` for each origin (an init script; a fresh tab's
``sessionStorage`` is empty otherwise, and a token kept there is lost with the tab).

Saved at every step that changed it — after each rendered page and after each parse (a
spider's clicks) — never on a timer: the state is read from the page (its context's
cookies, its origin's two storages) and saved, as a new version, only if it differs from
the last one. A page on which ``is_logged_in`` is false is first given the newest state if
it was opened with an older one (another page of the worker logged in meanwhile), else the
spider logs in once — one page at a time — and the state is saved before the page is
rendered again.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import anyio
import msgspec

from crawler._fetch_spec import FetchResult
from eventlog import (
    NO_SESSION_VERSION,
    BrowserCookie,
    BrowserSessionStore,
    OriginStorage,
    SessionIdentity,
    SessionState,
)

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page

Check = Callable[[Any], Awaitable[bool]]
LogIn = Callable[[Any], Awaitable[None]]
RESTORED_MARK: Final = "crawlog-session-restored"
"""The ``sessionStorage`` key by which a tab knows its origin's storage was restored (once
per tab and origin: what the site changes afterwards is the site's); never saved."""
ERROR_NOT_LOGGED_IN: Final = "not logged in after log_in"
"""The fetch error of a page the spider's ``is_logged_in`` still refuses after a login."""
ERROR_LOGIN: Final = "login check failed"
"""The fetch error of a page whose ``is_logged_in`` or ``log_in`` raised a browser error
(a timeout, a page gone): the task is retried as after any failed fetch."""
_SAME_SITE: Final = frozenset({"Strict", "Lax", "None"})

_CAPTURE: Final = """() => {
  const pick = (store) => {
    const kept = {};
    for (let i = 0; i < store.length; i++) {
      const key = store.key(i);
      if (key !== MARK) kept[key] = store.getItem(key);
    }
    return kept;
  };
  try {
    return [location.origin, pick(localStorage), pick(sessionStorage)];
  } catch (e) {
    return null;  // an opaque origin (about:blank) has no storage to read
  }
}""".replace("MARK", json.dumps(RESTORED_MARK))

_APPLY: Final = """(origins) => {
  const mine = origins[location.origin];
  if (!mine) return;
  try {
    for (const [key, value] of Object.entries(mine.local)) localStorage.setItem(key, value);
    for (const [key, value] of Object.entries(mine.session)) sessionStorage.setItem(key, value);
    sessionStorage.setItem(MARK, "1");
  } catch (e) {}
}""".replace("MARK", json.dumps(RESTORED_MARK))


def restore_script(origins: dict[str, OriginStorage]) -> str:
    """The init script that gives a new tab's documents the storage ``origins`` kept for
    theirs, once per tab and origin (``localStorage`` only where the key is absent: the
    context's own value is newer)."""
    data = msgspec.json.encode(origins).decode()
    return f"""(() => {{
  const mine = ({data})[location.origin];
  if (!mine) return;
  try {{
    if (sessionStorage.getItem({json.dumps(RESTORED_MARK)}) !== null) return;
    for (const [key, value] of Object.entries(mine.local))
      if (localStorage.getItem(key) === null) localStorage.setItem(key, value);
    for (const [key, value] of Object.entries(mine.session)) sessionStorage.setItem(key, value);
    sessionStorage.setItem({json.dumps(RESTORED_MARK)}, "1");
  }} catch (e) {{}}
}})();"""


def browser_cookie(cookie: dict[str, Any]) -> BrowserCookie:
    """One of Playwright's ``context.cookies()`` as a session keeps it."""
    same_site = str(cookie.get("sameSite", "Lax"))
    return BrowserCookie(
        name=str(cookie["name"]),
        value=str(cookie["value"]),
        domain=str(cookie["domain"]),
        path=str(cookie.get("path", "/")),
        expires=float(cookie.get("expires", -1)),
        http_only=bool(cookie.get("httpOnly", False)),
        secure=bool(cookie.get("secure", False)),
        same_site=same_site if same_site in _SAME_SITE else "Lax",
    )


def playwright_cookie(cookie: BrowserCookie) -> dict[str, Any]:
    """A kept cookie as Playwright's ``context.add_cookies`` takes it."""
    return {
        "name": cookie.name,
        "value": cookie.value,
        "domain": cookie.domain,
        "path": cookie.path,
        "expires": cookie.expires,
        "httpOnly": cookie.http_only,
        "secure": cookie.secure,
        "sameSite": cookie.same_site,
    }


def merged(state: SessionState, cookies: list[dict[str, Any]], seen: Any) -> SessionState:
    """``state`` with the context's ``cookies`` (all of them: they are the context's whole
    jar) and the storage ``seen`` on one page (``[origin, local, session]``, or None for a
    page without an origin) in place of what it had for that origin."""
    origins = state.origins
    if isinstance(seen, list) and len(seen) == 3 and seen[0] not in ("null", ""):
        origin, local, session = seen
        origins = {**origins, str(origin): OriginStorage(local=local, session=session)}
    jar = tuple(sorted((browser_cookie(c) for c in cookies), key=_cookie_key))
    return SessionState(identity=state.identity, cookies=jar, origins=origins)


def _cookie_key(cookie: BrowserCookie) -> tuple[str, str, str]:
    return cookie.domain, cookie.path, cookie.name


def fetched(result: FetchResult) -> bool:
    """Whether ``result`` is a page the browser shows (one a login check can read)."""
    return result.error is None and 200 <= result.status < 400 and not result.handed_over


class BrowserSession:
    """One worker's copy of the job's session for its identity; `load` it before use."""

    def __init__(
        self,
        store: BrowserSessionStore,
        identity: SessionIdentity,
        *,
        is_logged_in: Check,
        log_in: LogIn,
    ) -> None:
        self.store, self.identity = store, identity
        self.is_logged_in, self.log_in = is_logged_in, log_in
        self.version = NO_SESSION_VERSION
        self.state = SessionState(identity=identity)
        self.logins = 0
        """How many times this worker logged in."""
        self._saving = anyio.Lock()
        self._logging_in = anyio.Lock()

    async def load(self) -> None:
        """Take the stored session (a state bound to another identity is not used)."""
        stored = await self.store.read(self.identity)
        self.version = stored.version
        if stored.state is not None and stored.state.identity == self.identity:
            self.state = stored.state

    async def prepare_context(self, context: BrowserContext) -> None:
        """Give a new context the session's cookies."""
        if self.state.cookies:
            await context.add_cookies([playwright_cookie(c) for c in self.state.cookies])  # type: ignore[misc]

    async def prepare_page(self, page: Page) -> int:
        """Give a new tab the session's storage; the version it was given."""
        if self.state.origins:
            await page.add_init_script(restore_script(self.state.origins))
        return self.version

    async def keep(self, page: Page) -> None:
        """Save the session if the step that left ``page`` as it is changed it."""
        async with self._saving:
            cookies = await page.context.cookies()
            try:
                seen = await page.evaluate(_CAPTURE)
            except Exception:  # the page navigating meanwhile: its storage at the next step
                seen = None
            state = merged(self.state, list(cookies), seen)  # type: ignore[arg-type]
            if state != self.state:
                await self._save(state)

    async def _save(self, state: SessionState) -> None:
        answer = await self.store.save(state, self.version)
        if not answer.saved:
            # Another worker saved meanwhile; this state is what this browser saw last.
            answer = await self.store.save(state, answer.version)
        if answer.saved:
            self.version, self.state = answer.version, state

    async def ensure(
        self,
        page: Page,
        result: FetchResult,
        given: int,
        again: Callable[[], Awaitable[FetchResult]],
    ) -> tuple[FetchResult, int]:
        """The page ``result`` rendered, logged in: as it is if ``is_logged_in``, else
        rendered ``again`` with the newest state (if the tab was ``given`` an older one)
        or after the spider's `log_in` (once, saved); with the version the tab has now."""
        if await self.is_logged_in(page):
            return result, given
        async with self._logging_in:
            if self.version != given:
                await self._apply(page)
                given = self.version
                result = await again()
                if not fetched(result) or await self.is_logged_in(page):
                    return result, given
            await self.log_in(page)
            self.logins += 1
            await self.keep(page)
            given = self.version
            result = await again()
            if fetched(result) and not await self.is_logged_in(page):
                result = msgspec.structs.replace(result, error=ERROR_NOT_LOGGED_IN, body=b"")
            return result, given

    async def _apply(self, page: Page) -> None:
        """Give a live tab the newest state: cookies to its context, storage to its origin."""
        if self.state.cookies:
            await page.context.add_cookies([playwright_cookie(c) for c in self.state.cookies])  # type: ignore[misc]
        await page.evaluate(_APPLY, msgspec.to_builtins(self.state.origins))


def session_for(
    spider: object, store: BrowserSessionStore, identity: SessionIdentity
) -> BrowserSession | None:
    """The session of a spider that declares how to tell it is logged in and how to log
    in (both or neither), else None."""
    check = getattr(spider, "is_logged_in", None)
    log_in = getattr(spider, "log_in", None)
    if check is None or log_in is None:
        return None
    return BrowserSession(store, identity, is_logged_in=check, log_in=log_in)
