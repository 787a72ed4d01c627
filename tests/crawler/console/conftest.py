"""Fixtures for the console: a real ``crawlog console`` process, and a real headless Chromium.

The browser is Debian's ``chromium`` driven by Playwright (its own browser download does
not work here). Where there is none, the browser tests are skipped, saying why (``-ra``
prints it); ``.ci/run`` installs it when missing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx
import pytest
from anyio.abc import Process

from crawler.cli._argv import crawlog_command
from tests.crawler.conftest import ROOT

CONSOLE_USER = "tester"
CONSOLE_ACTOR = f"{CONSOLE_USER}@console"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # the tests run as root
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@dataclass(frozen=True)
class RunningConsole:
    """A ``crawlog console`` process and the URL it printed."""

    url: str
    """As printed: ``http://127.0.0.1:PORT/login?token=...``."""
    base: str
    token: str
    process: Process

    def login_url(self, operator: str | None = None) -> str:
        """The printed URL, logging in as ``operator`` if given (``&as=``)."""
        return self.url if operator is None else f"{self.url}&as={quote(operator)}"

    @asynccontextmanager
    async def session(
        self, operator: str | None = None, **options: Any
    ) -> AsyncIterator[httpx.AsyncClient]:
        """An HTTP client logged in through the printed URL (its cookie kept)."""
        async with httpx.AsyncClient(base_url=self.base, **options) as http:
            answer = await http.get(self.login_url(operator))
            assert answer.status_code == 303, answer.text
            yield http


@pytest.fixture
async def console(
    valkey_url: str, job: str, data_dir: Path
) -> AsyncIterator[Callable[..., Awaitable[RunningConsole]]]:
    """``await console()``: ``crawlog console --job JOB --port 0`` running (``--job`` left
    out with ``of_job=False``); killed at the end."""
    started: list[Process] = []

    async def start(*extra: str, of_job: bool = True) -> RunningConsole:
        command = crawlog_command(
            "console", *(("--job", job) if of_job else ()), "--port", "0",
            "--user", CONSOLE_USER, "--data-dir", str(data_dir), *extra,
        )  # fmt: skip
        env = {**os.environ, "REDIS_URL": valkey_url}
        process = await anyio.open_process(command, env=env, cwd=ROOT, stderr=None)
        started.append(process)
        assert process.stdout is not None
        said = b""
        with anyio.fail_after(60):
            while b"\n" not in said:
                said += await process.stdout.receive()
        line = said.decode().splitlines()[0]
        prefix = "crawlog console: "
        assert line.startswith(prefix), line
        url = line.removeprefix(prefix)
        base, _, token = url.partition("/login?token=")
        return RunningConsole(url=url, base=base, token=token, process=process)

    yield start
    for process in started:
        if process.returncode is None:
            process.kill()
        await process.aclose()


@pytest.fixture
async def browsers(tmp_path: Path) -> AsyncIterator[Callable[[str], Awaitable[Any]]]:
    """``await browsers("name")``: a fresh headless Chromium context with its own profile
    directory (its own cookies: another browser), or a skip saying why."""
    executable = shutil.which("chromium")
    if executable is None:
        pytest.skip("no browser: Debian's chromium is not installed (apt-get install chromium)")
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        pytest.skip("no browser driver: the playwright package is not installed (.[dev])")
    async with async_playwright() as playwright:
        opened: list[Any] = []

        async def launch(name: str) -> Any:
            context = await playwright.chromium.launch_persistent_context(
                str(tmp_path / f"{name}-profile"),
                executable_path=executable,
                headless=True,
                args=CHROMIUM_ARGS,
            )
            opened.append(context)
            return context

        try:
            yield launch
        finally:
            for context in opened:
                await context.close()


@pytest.fixture
async def browser(browsers: Callable[[str], Awaitable[Any]]) -> Any:
    """A fresh headless Chromium context (its own profile directory), or a skip saying why."""
    return await browsers("chromium")


@pytest.fixture
def screenshot(tmp_path: Path) -> Callable[[Any, str], Awaitable[Path]]:
    """``await screenshot(page, "name")``: a PNG of the page in the test's tmp dir."""

    async def take(page: Any, name: str) -> Path:
        path = tmp_path / "screenshots" / f"{name}.png"
        path.parent.mkdir(exist_ok=True)
        await page.screenshot(path=str(path), full_page=True)
        print(f"screenshot: {path}")
        return path

    return take
