"""Every route of the console (each one ``ROUTES`` lists, so a new one cannot be left out)
answers a request without a session with 401 and one line saying how to get in, from
127.0.0.1 as from anywhere; the printed URL logs in, and the process prints that URL.
Real HTTP semantics through the ASGI app (httpx's ASGITransport); no Redis is reachable,
so anything answered was answered before the app touched a job."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.routing import Route

from crawler.console import ConsoleSettings
from crawler.console._app import create_app
from crawler.console._endpoints import ROUTES
from crawler.console._guard import LOGIN_PATH, REFUSED, SESSION_COOKIE
from tests.crawler.console.conftest import RunningConsole

pytestmark = pytest.mark.anyio
TOKEN = "s3cret-token"
HERE = ("127.0.0.1", 40_000)
ELSEWHERE = ("192.0.2.7", 40_000)
"""A client address of another host (TEST-NET-1)."""
PARAMETER = re.compile(r"\{(\w+)\}")


def client(tmp_path: Path, address: tuple[str, int]) -> httpx.AsyncClient:
    settings = ConsoleSettings(
        data_dir=tmp_path,
        redis_url="redis://127.0.0.1:9/0",  # never reached: the guard answers first
        token=TOKEN,
        user="tester",
        job="shop",
    )
    transport = httpx.ASGITransport(app=create_app(settings), client=address)
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8777")


def requests_of_every_route() -> list[tuple[str, str]]:
    """(method, path) for every method of every route, its parameters filled in."""
    found = []
    for route in ROUTES:
        assert isinstance(route, Route)
        path = PARAMETER.sub(lambda m: "shop" if m[1] == "job" else "t1", route.path)
        found += [(method, path) for method in sorted(route.methods or ()) if method != "HEAD"]
    return found


def test_the_routes_enumerated_are_every_route() -> None:
    found = requests_of_every_route()
    assert len({path for _, path in found}) == len(ROUTES) > 10
    assert ("GET", LOGIN_PATH) in found and ("POST", "/jobs/shop/sites/pause") in found


@pytest.mark.parametrize("address", [HERE, ELSEWHERE], ids=["from-here", "from-elsewhere"])
async def test_every_route_without_a_session_is_refused_with_one_line(
    tmp_path: Path, address: tuple[str, int]
) -> None:
    async with client(tmp_path, address) as http:
        for method, path in requests_of_every_route():
            data = {"csrf": "x", "form_id": "f", "reason": "r"} if method == "POST" else None
            plain = await http.request(method, path, data=data)
            guessed = await http.request(
                method, path, data=data, headers={"Cookie": f"{SESSION_COOKIE}=guessed"}
            )
            for answer in (plain, guessed):
                assert answer.status_code == 401, (method, path, answer.text)
                assert answer.text == REFUSED and answer.text.count("\n") == 1
                assert "/login?token=" in answer.text


async def test_a_login_with_a_wrong_token_opens_no_session(tmp_path: Path) -> None:
    async with client(tmp_path, HERE) as http:
        for params in ({}, {"token": "guess"}, {"token": TOKEN[:-1]}, {"token": TOKEN + "x"}):
            answer = await http.get(LOGIN_PATH, params=params)
            assert answer.status_code == 401 and answer.text == REFUSED
            assert SESSION_COOKIE not in answer.headers.get("set-cookie", "")
        assert (await http.get("/static/console.js")).status_code == 401


async def test_the_printed_url_logs_in_and_leaves_the_token_out_of_the_address(
    tmp_path: Path,
) -> None:
    async with client(tmp_path, HERE) as http:
        first = await http.get(LOGIN_PATH, params={"token": TOKEN})
        assert first.status_code == 303 and first.headers["location"] == "/"
        cookie = first.headers["set-cookie"]
        assert cookie.startswith(f"{SESSION_COOKIE}=") and TOKEN not in cookie
        assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
        home = await http.get("/")
        assert home.status_code == 303 and home.headers["location"] == "/jobs/shop"
        script = await http.get("/static/console.js")
        assert script.status_code == 200 and "EventSource" in script.text


async def test_an_action_without_its_session_s_form_token_is_refused(tmp_path: Path) -> None:
    async with client(tmp_path, HERE) as http:
        await http.get(LOGIN_PATH, params={"token": TOKEN})
        form = {"site": "http://shop.example", "reason": "x", "form_id": "f1"}
        for extra in ({}, {"csrf": ""}, {"csrf": TOKEN}, {"token": TOKEN}):
            answer = await http.post("/jobs/shop/sites/pause", data={**form, **extra})
            # Refused before the job is looked up (no Redis is reachable at that URL).
            assert answer.status_code == 403 and "not of your session" in answer.text


async def test_a_login_as_a_name_that_is_not_one_is_refused(tmp_path: Path) -> None:
    async with client(tmp_path, HERE) as http:
        for name in ("a b", "x" * 65, "<script>", "alice@console"):
            answer = await http.get(LOGIN_PATH, params={"token": TOKEN, "as": name})
            assert answer.status_code == 400 and "not an operator name" in answer.text
            assert "set-cookie" not in answer.headers


async def test_the_console_prints_its_login_url_and_listens_on_this_machine_only(
    start_job: Callable[..., Any], console: Callable[..., Awaitable[RunningConsole]]
) -> None:
    await start_job(["http://127.0.0.1:9/"])
    running = await console()
    assert running.url.startswith("http://127.0.0.1:") and "/login?token=" in running.url
    assert len(running.token) >= 24
    async with httpx.AsyncClient(base_url=running.base) as http:
        assert (await http.get("/")).status_code == 401
