"""The console serves another host only with its token, and acts only with the token in
the form, whoever asks. Real HTTP semantics through the ASGI app (httpx's ASGITransport
with a client address that is not this machine's), and the real process's default bind."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from crawler.console import ConsoleSettings
from crawler.console._app import create_app
from crawler.console._guard import TOKEN_COOKIE
from tests.crawler.console.conftest import RunningConsole

pytestmark = pytest.mark.anyio
TOKEN = "s3cret-token"
ELSEWHERE = ("192.0.2.7", 40_000)
"""A client address of another host (TEST-NET-1)."""


def app(tmp_path: Path) -> Any:
    settings = ConsoleSettings(
        data_dir=tmp_path,
        redis_url="redis://127.0.0.1:9/0",  # never reached: the guard answers first
        token=TOKEN,
        user="tester",
        job="shop",
    )
    return create_app(settings)


def client(tmp_path: Path, address: tuple[str, int], host: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app(tmp_path), client=address)
    return httpx.AsyncClient(transport=transport, base_url=f"http://{host}")


async def test_another_host_without_the_token_is_refused(tmp_path: Path) -> None:
    async with client(tmp_path, ELSEWHERE, "203.0.113.5:8777") as http:
        for path in ("/", "/jobs/shop", "/jobs/shop/events", "/static/console.js"):
            answer = await http.get(path)
            assert answer.status_code == 403, path
            assert "token" in answer.text
        wrong = await http.get("/", params={"token": "guess"})
        assert wrong.status_code == 403


async def test_another_host_with_the_token_gets_a_cookie_and_then_the_pages(
    tmp_path: Path,
) -> None:
    async with client(tmp_path, ELSEWHERE, "203.0.113.5:8777") as http:
        first = await http.get("/", params={"token": TOKEN})
        assert first.status_code == 303
        assert first.headers["location"] == "http://203.0.113.5:8777/"  # out of the URL
        assert http.cookies.get(TOKEN_COOKIE) == TOKEN
        script = await http.get("/static/console.js")
        assert script.status_code == 200 and "EventSource" in script.text
        home = await http.get("/")
        assert home.status_code == 303 and home.headers["location"] == "/jobs/shop"


async def test_a_page_reaching_the_console_by_another_name_is_refused(tmp_path: Path) -> None:
    # A DNS name of the attacker's that resolves to 127.0.0.1: the client is loopback, the
    # Host header is not, so the page may not read the console.
    async with client(tmp_path, ("127.0.0.1", 40_000), "evil.example:8777") as http:
        assert (await http.get("/static/console.js")).status_code == 403
    async with client(tmp_path, ("127.0.0.1", 40_000), "localhost:8777") as http:
        assert (await http.get("/static/console.js")).status_code == 200


async def test_an_action_without_the_token_in_its_form_is_refused_even_from_here(
    tmp_path: Path,
) -> None:
    async with client(tmp_path, ("127.0.0.1", 40_000), "127.0.0.1:8777") as http:
        answer = await http.post(
            "/jobs/shop/sites/pause",
            data={"site": "http://shop.example", "reason": "x", "form_id": "f1"},
        )
    # Refused before the job is even looked up (no Redis is reachable at that URL).
    assert answer.status_code == 403 and "token" in answer.text


async def test_the_console_listens_on_this_machine_only_unless_told(
    start_job: Callable[..., Any], console: Callable[..., Awaitable[RunningConsole]]
) -> None:
    await start_job(["http://127.0.0.1:9/"])
    running = await console()
    assert running.url.startswith("http://127.0.0.1:")
    assert len(running.token) >= 24
