"""Whatever a page links to or redirects to — other schemes, ports, hosts, paths outside
the seed's directory — the crawler asks only for URLs in its scope: checked from the
servers' own request logs, and the event log says why each redirect was not followed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from crawler._fetch import ERROR_INVALID_REDIRECT, ERROR_REDIRECT_OUT_OF_SCOPE, Fetcher
from eventlog import EventLog, TaskFailed
from tests.crawler.hostile_site import Route, serve_hostile

pytestmark = pytest.mark.anyio


def links(*hrefs: str) -> Route:
    return Route("".join(f'<a href="{href}">x</a>\n' for href in hrefs).encode())


def redirect(location: str) -> Route:
    return Route(b"", status=302, headers=(("Location", location),))


async def test_links_and_redirects_out_of_scope_are_never_requested(
    start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    async with serve_hostile({}) as other, serve_hostile({}) as site:
        me, them = f"127.0.0.1:{site.port}", f"127.0.0.1:{other.port}"
        hostile = [
            "file:///etc/passwd",
            "FILE:///etc/passwd",
            "javascript:fetch('/docs/js')",
            "  JavaScript:alert(1)",
            "data:text/html,<a href=/docs/data>x</a>",
            "mailto:root@localhost",
            "ftp://127.0.0.1/",
            "gopher://127.0.0.1:70/",
            "ws://" + me + "/docs/ws",
            "about:blank",
            "vbscript:msgbox(1)",
            f"http://{them}/",
            f"HTTP://{them}/docs/",
            f"//{them}/docs/",
            f"http://localhost:{site.port}/docs/via-localhost",
            f"http://[::1]:{site.port}/docs/v6",
            f"http://{me}@{them}/docs/userinfo",
            f"http:\\\\{them}\\docs\\",
            f"https://{me}/docs/tls",
            "/private/outside-the-prefix",
            "../private/dotdot",
            "/docs/../private/dots",
            "/docs/in-scope",
            "/docs/redir-away",
            "/docs/redir-file",
            "/docs/redir-js",
            "/docs/redir-chain",
            "/docs/redir-outside",
        ]
        site.routes.update(
            {
                "/docs/": links(*hostile),
                "/docs/in-scope": Route(b"<title>fine</title>"),
                "/docs/redir-away": redirect(f"http://{them}/docs/"),
                "/docs/redir-file": redirect("file:///etc/passwd"),
                "/docs/redir-js": redirect("javascript:alert(1)"),
                "/docs/redir-chain": redirect("/docs/redir-away"),
                "/docs/redir-outside": redirect("/private/"),
            }
        )
        await start_job([site.url + "/docs/"])
        with anyio.fail_after(60):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
        asked = set(site.requests)
    assert other.requests == []
    expected = {
        "/robots.txt",
        "/docs/",
        "/docs/in-scope",
        "/docs/redir-away",
        "/docs/redir-file",
        "/docs/redir-js",
        "/docs/redir-chain",
        "/docs/redir-outside",
    }
    # Browsers read "http:" + two backslashes + host as //host/; yarl as a path of this site (
    # asked as /docs/%5C%5C...): either way, not a step outside the scope.
    backslashed = {path for path in asked if path.startswith("/docs/%5C%5C")}
    assert asked - backslashed == expected

    failed = {
        e.reason for e in (x.event for x in await log.read_range()) if isinstance(e, TaskFailed)
    }
    # The backslashed link is a path of this site that does not exist.
    assert failed == {ERROR_REDIRECT_OUT_OF_SCOPE, ERROR_INVALID_REDIRECT, "HTTP 404"}


@pytest.mark.parametrize(
    "location",
    [
        "javascript:alert(1)",
        "mailto:a@b.example",
        "data:text/html,x",
        "file:///etc/passwd",
        "file:x",
        "ftp://127.0.0.1/",
        "about:blank",
        "chrome://settings",
    ],
)
async def test_a_redirect_to_another_scheme_is_an_invalid_redirect(location: str) -> None:
    routes = {"/r": redirect(location)}
    async with serve_hostile(routes) as site, Fetcher() as fetcher:
        result = await fetcher.fetch(site.url + "/r", redirect_allowed=lambda url: True)
        assert site.requests == ["/r"]
    assert result.error == ERROR_INVALID_REDIRECT and result.body == b""
