"""Who may see the console, and who may act: the token printed at start.

A request from this machine (a loopback client address, and a loopback name in its
``Host`` header, so that a page elsewhere cannot reach the console through a DNS name that
resolves to 127.0.0.1) may read the pages. Any other request must carry the token: once in
the URL (``?token=``, as Jupyter prints it), after which a cookie carries it. Every action
(a POST) must carry the token in its form, whoever sends it: the console's own pages put
it there, a page of another site cannot know it, so it cannot make a browser act here.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Mapping
from typing import Literal

TOKEN_COOKIE = "crawlog_console_token"
TOKEN_PARAM = "token"
TOKEN_BYTES = 24
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})

Access = Literal["local", "token", "refused"]


def new_token() -> str:
    """A fresh random token for one console process."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def same_token(given: str | None, token: str) -> bool:
    """Whether ``given`` is the token (in constant time)."""
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def is_loopback_address(host: str | None) -> bool:
    """Whether a client address is this machine's loopback (127.0.0.0/8, ::1)."""
    if not host:
        return False
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_loopback_name(host_header: str | None) -> bool:
    """Whether a ``Host`` header names this machine (a loopback address or localhost)."""
    if not host_header:
        return False
    host = host_header.strip()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host
    else:
        host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return host.lower() in LOOPBACK_NAMES or is_loopback_address(host)


def access(
    client: str | None, host_header: str | None, presented: Mapping[str, str | None], token: str
) -> Access:
    """How a request may read pages: from this machine, by its token, or not at all.

    ``presented``: the token as the query, the cookie and the ``Authorization`` header
    carry it (each may be None).
    """
    if any(same_token(value, token) for value in presented.values()):
        return "token"
    if is_loopback_address(client) and is_loopback_name(host_header):
        return "local"
    return "refused"
