"""The console's ASGI app (Starlette) and how ``crawlog console`` serves it (uvicorn).

One Redis client for the process; per job, the ``OpenJob`` the operator commands use and
a ``JobWatch`` folding its log, both made on the first request about the job and kept in
``app.state.console`` (``_state``). Every request but the login passes
:class:`SessionGuard` first (``_guard``); the pages and actions are module-level
endpoints (``_endpoints.ROUTES``).
"""

from __future__ import annotations

import socket

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from crawler.console._endpoints import ROUTES, lifespan
from crawler.console._guard import LOGIN_PATH, REFUSED, SESSION_COOKIE, TOKEN_PARAM, Sessions
from crawler.console._state import Console, ConsoleSettings
from eventlog import ConfigError

GRACEFUL_SHUTDOWN_S = 1
"""Open event streams never end by themselves: a stop waits this long for them."""


class SessionGuard:
    """Refuses every request without a session but the login itself (see ``_guard``)."""

    def __init__(self, app: ASGIApp, sessions: Sessions) -> None:
        self.app = app
        self.sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == LOGIN_PATH:
            await self.app(scope, receive, send)
            return
        if self.sessions.get(Request(scope).cookies.get(SESSION_COOKIE)) is None:
            await PlainTextResponse(REFUSED, status_code=401)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def create_app(settings: ConsoleSettings) -> Starlette:
    """The console as an ASGI app (its lifespan connects to the job's Redis)."""
    app = Starlette(routes=ROUTES, lifespan=lifespan)
    console = Console(settings)
    app.state.console = console
    app.add_middleware(SessionGuard, sessions=console.sessions)
    return app


def bind_socket(host: str, port: int) -> socket.socket:
    """The listening socket, bound now: the URL printed names the real port, and a port in
    use is a one-line error before anything starts."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket, token: str) -> str:
    """The URL to open: the login, token included."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{LOGIN_PATH}?{TOKEN_PARAM}={token}"


async def serve(settings: ConsoleSettings, sock: socket.socket) -> None:
    """Serve the console on ``sock`` until SIGINT or SIGTERM."""
    import uvicorn

    config = uvicorn.Config(
        create_app(settings),
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )
    await uvicorn.Server(config).serve(sockets=[sock])
