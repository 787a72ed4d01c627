"""``crawlog shell URL``: one page fetched as a worker would, handed to Python as the
spider's ``response``, with ``fetch(url)`` to load another. Through the real command line
against the test site (its request log says what was fetched): ``-c CODE``, a script on
stdin, the prompt itself on a pseudo-terminal, ``--job``, and the errors."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import RunningSite
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio

PROMPT_S = 30.0


def paths(site: RunningSite) -> list[str]:
    return [r.path for r in site.requests]


async def test_command_evaluates_an_expression_on_the_fetched_page(
    site: RunningSite, valkey_url: str, data_dir: Path
) -> None:
    code = "response.status, response.url, response.content_type, 'href' in response.text"
    result = await crawlog(valkey_url, data_dir, "shell", site.url + "/", "-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == repr((200, site.url + "/", "text/html", True))
    assert paths(site) == ["/"], "one page, and no robots.txt: the shell asks for the URL given"


async def test_a_script_on_stdin_fetches_another_page_relative_to_the_first(
    site: RunningSite, valkey_url: str, data_dir: Path
) -> None:
    script = "\n".join(
        [
            "page = fetch('robots.txt')",
            "print(page is response, response.url)",
            "for n in range(2):",
            "    n * 10",
        ]
    )
    result = await crawlog(valkey_url, data_dir, "shell", site.url + "/", stdin=script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"True {site.url}/robots.txt", "0", "10"]
    assert paths(site) == ["/", "/robots.txt"]


async def test_code_that_raises_shows_its_traceback_and_exits_1(
    site: RunningSite, valkey_url: str, data_dir: Path
) -> None:
    result = await crawlog(valkey_url, data_dir, "shell", site.url + "/", "-c", "response.nope")
    assert result.returncode == 1
    assert "AttributeError" in result.stderr and "nope" in result.stderr, result.stderr


async def test_the_prompt_on_a_terminal_has_response_and_fetch(
    site: RunningSite, valkey_url: str, data_dir: Path
) -> None:
    leader, follower = pty.openpty()
    env = {**clean_env(), "REDIS_URL": valkey_url}
    command = crawlog_command("shell", site.url + "/", "--data-dir", str(data_dir))
    process = subprocess.Popen(
        command, stdin=follower, stdout=follower, stderr=follower, cwd=ROOT, env=env
    )
    os.close(follower)
    try:
        seen = await anyio.to_thread.run_sync(read_until, leader, b">>> ")
        assert b"`response` is " + f"{site.url}/ (HTTP 200)".encode() in seen, seen
        os.write(leader, b"response.status + 1\n")
        assert b"201" in await anyio.to_thread.run_sync(read_until, leader, b">>> ")
        os.write(leader, b"\x04")  # Ctrl-D leaves
        assert await anyio.to_thread.run_sync(process.wait, PROMPT_S) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)


def read_until(fd: int, marker: bytes) -> bytes:
    """What the pseudo-terminal shows until ``marker`` (the prompt) appears."""
    seen = b""
    deadline = time.monotonic() + PROMPT_S
    while marker not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"no {marker!r} in {seen!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the other side closed
                chunk = b""
            assert chunk, f"the shell ended before {marker!r}: {seen!r}"
            seen += chunk
    return seen


async def test_job_gives_the_job_s_settings_and_an_unknown_job_the_defaults(
    site: RunningSite,
    valkey_url: str,
    data_dir: Path,
    start_job: Callable[..., Any],
    job: str,
) -> None:
    await start_job([site.url + "/"])
    code = "import json; print(json.dumps(config.seeds))"
    known = await crawlog(valkey_url, data_dir, "shell", site.url + "/", "--job", job, "-c", code)
    assert known.returncode == 0, known.stderr
    assert json.loads(known.stdout) == [site.url + "/"]
    unknown = await crawlog(
        valkey_url, data_dir, "shell", site.url + "/", "--job", job + "x", "-c", "config"
    )
    assert unknown.returncode == 0, unknown.stderr
    assert unknown.stdout == ""  # None: the defaults
    assert f"no job '{job}x'" in unknown.stderr and "default settings" in unknown.stderr


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("notaurl", "has no scheme"),
        ("ftp://127.0.0.1/x", "is not an http(s) URL"),
        ("http://127.0.0.1:1/", "cannot fetch http://127.0.0.1:1/"),
    ],
)
async def test_a_url_that_cannot_be_fetched_is_one_line_and_exit_2(
    valkey_url: str, data_dir: Path, url: str, said: str
) -> None:
    result = await crawlog(valkey_url, data_dir, "shell", url, "-c", "response")
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("crawlog: error: ") and said in line, line
    assert result.stdout == ""
