"""The test site's pages that answer the request rather than its path alone: they read its
method, headers and body.

Linked from no generated page (a crawl of the site is unchanged); a spider asks for them:

* ``/echo`` (any method, any path below it): the request as JSON — method, path, headers
  (names lowercase), body as text, and the fields of a form body. For tests of user agents,
  default and per-request headers, POST and forms. Each ``set-cookie`` query parameter is
  answered as a ``Set-Cookie`` header (``/echo?set-cookie=a%3D1%3B%20Path%3D%2F``), for
  tests of cookies with any attributes.
* ``/login``: a form (GET) and its handler (POST ``user`` and ``password``). The right pair
  (`LOGIN_USER`, `LOGIN_PASSWORD`) is answered with a 303 to `MEMBERS_PREFIX` and a
  ``Set-Cookie`` session; a wrong one with 403 and the form again.
* ``/app/``: a script-run app whose login is kept in the browser's storage
  (`crawler.testsite._app`).
* ``/members/`` and ``/members/N``: pages only a session sees (else 403): the index links
  every member page, each member page the next one. For tests of cookies shared by workers.

Pure: a request in, a page out (or None for a path that is not one of these).
"""

from __future__ import annotations

import hashlib
import html
from typing import Final
from urllib.parse import parse_qsl

import msgspec

from crawler.testsite._app import APP_TOKEN_PATH, app_answer
from crawler.testsite._sitegen import HTML, Page

ECHO_PREFIX: Final = "/echo"
LOGIN_PATH: Final = "/login"
MEMBERS_PREFIX: Final = "/members/"
LOGIN_USER: Final = "crawler"
LOGIN_PASSWORD: Final = "open sesame"
SESSION_COOKIE: Final = "session"
MEMBER_PAGES: Final = 20
"""Member pages behind the login: ``/members/1`` … ``/members/20``."""
SET_COOKIE_PARAM: Final = "set-cookie"
"""The query parameter of ``/echo`` whose values the answer sets as cookies."""
FORM_TYPE: Final = "application/x-www-form-urlencoded"
JSON: Final = "application/json"
SESSION_TOKEN: Final = hashlib.blake2b(LOGIN_USER.encode(), digest_size=8).hexdigest()
"""The one session value the site hands out and accepts (deterministic: tests may check it)."""


class IncomingRequest(msgspec.Struct, frozen=True):
    """A request as these pages read it."""

    method: str
    path: str
    """Path and query, as the client sent them."""
    headers: dict[str, str]
    """Names lowercase; a repeated header's values joined with ", " (Cookie: with "; ")."""
    body: bytes = b""


def answer(request: IncomingRequest) -> Page | None:
    """The page for ``request``, or None if its path is none of these pages."""
    path = request.path.partition("?")[0]
    if path == ECHO_PREFIX or path.startswith(ECHO_PREFIX + "/"):
        return _echo(request)
    if path == LOGIN_PATH:
        return _login(request)
    if path == MEMBERS_PREFIX.rstrip("/") or path.startswith(MEMBERS_PREFIX):
        return _members(request, path)
    return app_answer(request.method, request.path, request.headers, request.body)


def accepts_body(path: str) -> bool:
    """Whether a request of ``path`` may carry a body (a POST): only these pages read one."""
    path = path.partition("?")[0]
    return path in (LOGIN_PATH, ECHO_PREFIX, APP_TOKEN_PATH) or path.startswith(ECHO_PREFIX + "/")


def session_of(request: IncomingRequest) -> str | None:
    """The session cookie the request carries, if any."""
    for pair in request.headers.get("cookie", "").split(";"):
        name, _, value = pair.strip().partition("=")
        if name == SESSION_COOKIE:
            return value
    return None


def _form(request: IncomingRequest) -> dict[str, str]:
    if request.headers.get("content-type", "").partition(";")[0].strip().lower() != FORM_TYPE:
        return {}
    return dict(parse_qsl(request.body.decode("utf-8", "replace"), keep_blank_values=True))


def _echo(request: IncomingRequest) -> Page:
    echoed = {
        "method": request.method,
        "path": request.path,
        "headers": request.headers,
        "body": request.body.decode("utf-8", "replace"),
        "form": _form(request),
    }
    query = request.path.partition("?")[2]
    cookies = tuple(
        ("Set-Cookie", value)
        for name, value in parse_qsl(query, keep_blank_values=True)
        if name == SET_COOKIE_PARAM
    )
    return Page(200, msgspec.json.encode(echoed), JSON, cookies)


_LOGIN_FORM: Final = (
    "<!doctype html><html><head><title>Log in</title></head><body><h1>Log in</h1>{note}"
    f'<form method="post" action="{LOGIN_PATH}">'
    '<input name="user"><input name="password" type="password">'
    '<input type="hidden" name="next" value="' + MEMBERS_PREFIX + '">'
    '<button type="submit">Log in</button></form></body></html>'
)


def _login(request: IncomingRequest) -> Page:
    if request.method != "POST":
        return Page(200, _LOGIN_FORM.format(note="").encode(), HTML)
    form = _form(request)
    if form.get("user") != LOGIN_USER or form.get("password") != LOGIN_PASSWORD:
        note = "<p class=error>wrong user or password</p>"
        return Page(403, _LOGIN_FORM.format(note=note).encode(), HTML)
    cookie = f"{SESSION_COOKIE}={SESSION_TOKEN}; Path={MEMBERS_PREFIX}; HttpOnly; Max-Age=3600"
    return Page(
        303,
        b"logged in\n",
        "text/plain",
        (("Location", MEMBERS_PREFIX), ("Set-Cookie", cookie)),
    )


def _members(request: IncomingRequest, path: str) -> Page:
    if session_of(request) != SESSION_TOKEN:
        body = f'<!doctype html><p>members only: <a href="{LOGIN_PATH}">log in</a></p>'
        return Page(403, body.encode(), HTML)
    rest = path[len(MEMBERS_PREFIX) :] if path.startswith(MEMBERS_PREFIX) else ""
    if rest == "":
        links = "".join(
            f'<li><a href="{MEMBERS_PREFIX}{n}">member {n}</a></li>'
            for n in range(1, MEMBER_PAGES + 1)
        )
        body = f"<!doctype html><title>Members</title><h1>Members</h1><ul>{links}</ul>"
        return Page(200, body.encode(), HTML)
    if not rest.isdigit() or not 1 <= int(rest) <= MEMBER_PAGES:
        return Page(404, b"not found\n", "text/plain")
    n = int(rest)
    following = f'<a href="{MEMBERS_PREFIX}{n + 1}">next</a>' if n < MEMBER_PAGES else ""
    body = (
        f"<!doctype html><title>Member {n}</title><h1 class=member>Member {n}</h1>"
        f"<p class=secret>{html.escape(f'secret of member {n}')}</p>{following}"
    )
    return Page(200, body.encode(), HTML)
