"""Who may see the console, and who may act: the token printed at start, then a session.

Nothing is served without a session, from this machine as from any other: any local user
can reach 127.0.0.1, so a loopback address proves nothing. The URL ``crawlog console``
prints is ``/login?token=...``; that request, with the token (compared in constant time),
opens a session: a random id in an HttpOnly, SameSite=Strict cookie, and the browser is
sent on to ``/`` (the token out of the address bar, the history and any ``Referer``).
Every other request, pages, the script and the event streams included, needs that cookie.

A session holds who acts (the name given at login, ``&as=NAME``; the console's ``--user``
if none is given) and its own form token: every action (a POST) must carry the form token
of the session that sends it, so a form's token copied into another browser, or a page of
another site, cannot act.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
from collections import OrderedDict

import msgspec

from eventlog import ConfigError

SESSION_COOKIE = "crawlog_console_session"
LOGIN_PATH = "/login"
TOKEN_PARAM = "token"
OPERATOR_PARAM = "as"
"""The login's optional operator name: ``/login?token=...&as=alice``."""
CSRF_FIELD = "csrf"
"""The form field holding the session's form token."""
TOKEN_BYTES = 24
SESSIONS_KEPT = 1_000
"""Sessions one console process remembers (the oldest forgotten first: log in again)."""
OPERATOR_NAME = re.compile(r"[\w.+-]{1,64}")
"""An operator's name: it goes into events as ``NAME@console``."""
REFUSED = (
    "This console needs its token: open the URL `crawlog console` printed at start "
    f"(it ends in {LOGIN_PATH}?{TOKEN_PARAM}=...).\n"
)
"""The one-line page of a request without a session (401)."""
FORM_REFUSED = (
    "This form is not of your session: reload the page and submit it again (no action was taken).\n"
)
"""The one-line page of an action whose form token is not its session's (403)."""


class Session(msgspec.Struct, frozen=True, kw_only=True):
    """One browser's login: who acts, and the token its forms carry."""

    operator: str
    csrf: str


def new_token() -> str:
    """A fresh random token (the console's, a session id, a form token)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def same_token(given: str | None, token: str) -> bool:
    """Whether ``given`` is the token (in constant time)."""
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def operator_name(given: str | None, default: str) -> str:
    """Who a login acts as: the name given, else ``default`` (the console's ``--user``);
    ``ConfigError`` for a name that is not one."""
    name = (given or "").strip()
    if not name:
        return default
    if OPERATOR_NAME.fullmatch(name) is None:
        raise ConfigError(
            f"not an operator name: {name!r} (letters, digits, '.', '+', '-' and '_', "
            "at most 64): log in again with another &as="
        )
    return name


class Sessions:
    """The sessions opened by logins, by id (kept as a digest: a lookup's time says
    nothing about the ids held)."""

    def __init__(self, kept: int = SESSIONS_KEPT) -> None:
        self.kept = kept
        self._open: OrderedDict[bytes, Session] = OrderedDict()

    def open(self, operator: str) -> str:
        """A new session acting as ``operator``: its id, for the cookie."""
        session_id = new_token()
        self._open[_digest(session_id)] = Session(operator=operator, csrf=new_token())
        while len(self._open) > self.kept:
            self._open.popitem(last=False)
        return session_id

    def get(self, session_id: str | None) -> Session | None:
        """The session of this id, if one is open."""
        return None if not session_id else self._open.get(_digest(session_id))


def _digest(session_id: str) -> bytes:
    return hashlib.sha256(session_id.encode()).digest()


def is_loopback_address(host: str | None) -> bool:
    """Whether a listening or client address is this machine's loopback (127.0.0.0/8, ::1)."""
    if not host:
        return False
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
