"""The live progress table of `crawlog crawl` on a terminal stays one table while the
workers print (a spider's tracebacks) and after a Ctrl-C: their output comes through the
crawl and is printed above the table, never drawn over it, so the header shows once."""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import struct
import termios
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT
from tests.crawler.terminal import screen_lines

pytestmark = pytest.mark.anyio
WIDTH, HEIGHT = 120, 50


async def _crawl_on_a_terminal(
    command: list[str], env: dict[str, str], *, interrupt_when: bytes | None = None
) -> tuple[int, bytes]:
    """Run ``command`` on a new pseudo-terminal; its exit status and all it showed. With
    ``interrupt_when``, Ctrl-C is pressed once that text has been shown: SIGINT to the
    whole process group, as a terminal sends it to its foreground group."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", HEIGHT, WIDTH, 0, 0))
    chunks: list[bytes] = []
    pressed = False
    group: list[int] = []

    def read_all() -> None:
        nonlocal pressed
        while True:
            try:
                data = os.read(main, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)
            if interrupt_when and not pressed and interrupt_when in b"".join(chunks):
                pressed = True
                os.killpg(group[0], signal.SIGINT)

    try:
        with anyio.fail_after(90):
            async with anyio.create_task_group() as tg:
                process = await anyio.open_process(
                    command,
                    env=env,
                    cwd=ROOT,
                    stdin=child,
                    stdout=child,
                    stderr=child,
                    start_new_session=True,
                )
                group.append(process.pid)
                tg.start_soon(anyio.to_thread.run_sync, read_all)
                os.close(child)
                child = -1
                await process.wait()
    finally:
        if child != -1:
            os.close(child)
        os.close(main)
    assert process.returncode is not None
    return process.returncode, b"".join(chunks)


def _headers(output: bytes, job: str) -> list[str]:
    return [line for line in screen_lines(output, WIDTH) if line.startswith(f"crawlog job {job}")]


async def test_the_table_s_header_shows_once_while_a_spider_s_errors_are_logged(
    valkey_url: str, job: str, data_dir: Path
) -> None:
    env = clean_env(REDIS_URL=valkey_url, TERM="xterm", COLUMNS=str(WIDTH))
    async with serve_testsite(pages=60, seed=1) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--job", job,
            "--workers", "1", "--concurrency", "2", "--delay", "0.02",
            "--spider", "tests.crawler.noisy_spider:NoisySpider", "--data-dir", str(data_dir),
            "--fail-on", "aborted",  # its spider errors are logged, not judged, here
        )  # fmt: skip
        status, output = await _crawl_on_a_terminal(command, env)
    lines = screen_lines(output, WIDTH)
    assert status == 0, "\n".join(lines)
    assert any("ValueError: cannot parse" in line for line in lines), "\n".join(lines)
    assert len(_headers(output, job)) == 1, "\n".join(lines)


async def test_the_table_s_header_shows_once_after_a_ctrl_c(
    valkey_url: str, job: str, data_dir: Path
) -> None:
    env = clean_env(REDIS_URL=valkey_url, TERM="xterm", COLUMNS=str(WIDTH))
    async with serve_testsite(pages=400, seed=1) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--job", job,
            "--workers", "2", "--concurrency", "2", "--delay", "0.05",
            "--spider", "tests.crawler.noisy_spider:NoisySpider", "--data-dir", str(data_dir),
        )  # fmt: skip
        # Typed as soon as the table is up: the workers may still be starting.
        _, output = await _crawl_on_a_terminal(command, env, interrupt_when=b"ended/found")
    lines = screen_lines(output, WIDTH)
    assert any(line.startswith("stopped ") for line in lines), "\n".join(lines)
    assert len(_headers(output, job)) == 1, "\n".join(lines)
