"""The console's ASGI app (Starlette) and how ``crawlog console`` serves it (uvicorn).

One Redis client for the process; per job, the ``OpenJob`` the operator commands use and
a ``JobWatch`` folding its log, both made on the first request about the job and kept in
``app.state.console`` (``_state``). Every request passes :class:`TokenGuard` first
(``_guard``); the pages and actions are module-level endpoints (``_endpoints.ROUTES``).
"""

from __future__ import annotations

import socket
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.datastructures import URL
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from crawler.console._endpoints import ROUTES, lifespan
from crawler.console._guard import TOKEN_COOKIE, TOKEN_PARAM, access, same_token
from crawler.console._state import Console, ConsoleSettings
from eventlog import ConfigError

GRACEFUL_SHUTDOWN_S = 1
"""Open event streams never end by themselves: a stop waits this long for them."""


class TokenGuard:
    """Refuses a request from another host without the token (see ``_guard``)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        bearer = request.headers.get("authorization", "")
        presented = {
            "query": request.query_params.get(TOKEN_PARAM),
            "cookie": request.cookies.get(TOKEN_COOKIE),
            "header": bearer.removeprefix("Bearer ") if bearer.startswith("Bearer ") else None,
        }
        client = scope.get("client")
        how = access(
            client[0] if client else None, request.headers.get("host"), presented, self.token
        )
        if how == "refused":
            response: Response = PlainTextResponse(
                "This console serves another host only with its token: open the URL "
                "`crawlog console` printed at start (it ends in ?token=...).\n",
                status_code=403,
            )
        elif same_token(presented["query"], self.token):
            # Into a cookie, and out of the address bar (and of the history, and of a
            # Referer sent anywhere).
            query = [(k, v) for k, v in request.query_params.multi_items() if k != TOKEN_PARAM]
            clean = URL(scope=scope).replace(query=urlencode(query))
            response = RedirectResponse(str(clean), status_code=303)
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
        else:
            await self.app(scope, receive, send)
            return
        await response(scope, receive, send)


def create_app(settings: ConsoleSettings) -> Starlette:
    """The console as an ASGI app (its lifespan connects to the job's Redis)."""
    app = Starlette(routes=ROUTES, lifespan=lifespan)
    app.state.console = Console(settings)
    app.add_middleware(TokenGuard, token=settings.token)
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
    """The URL to open, token included."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?{TOKEN_PARAM}={token}"


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
