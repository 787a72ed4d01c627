"""Operator commands: one line and exit 2 for an unknown job or an unreachable server."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from tests.crawler.operator_cli import ROOT, crawlog

pytestmark = pytest.mark.anyio

COMMANDS = [
    ("pause", "--reason", "r"),
    ("resume", "--site", "example.com", "--reason", "r"),
    ("retry", "abc", "--reason", "r"),
    ("dead", "list"),
    ("history", "abc"),
    ("workers",),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
async def test_an_unknown_job_is_one_line_and_exit_2(
    command: tuple[str, ...], valkey_url: str, data_dir: Path
) -> None:
    with anyio.fail_after(60):
        ran = await crawlog(valkey_url, data_dir, *command, "--job", "no-such-job")
    assert ran.returncode == 2, ran.stdout
    assert ran.stderr.startswith("crawlog: error: no job 'no-such-job' here")
    assert ran.stderr.count("\n") == 1


async def test_an_unreachable_server_is_one_line_and_exit_2(data_dir: Path) -> None:
    with anyio.fail_after(60):
        ran = await crawlog("redis://127.0.0.1:1/0", data_dir, "workers", "--job", "j")
    assert ran.returncode == 2
    assert ran.stderr.startswith("crawlog: error: cannot reach Redis at redis://127.0.0.1:1/0")
    assert ran.stderr.count("\n") == 1


HELPED = [
    ["pause"],
    ["resume"],
    ["retry"],
    ["dead"],
    ["dead", "list"],
    ["dead", "replay"],
    ["history"],
    ["workers"],
]


@pytest.mark.parametrize("command", HELPED, ids=" ".join)
async def test_every_operator_command_has_help_with_an_example(command: list[str]) -> None:
    env = {**os.environ}
    with anyio.fail_after(60):
        ran = await anyio.run_process(crawlog_command(*command, "--help"), env=env, cwd=ROOT)
    assert "Example" in ran.stdout.decode() and f"crawlog {command[0]}" in ran.stdout.decode()


async def test_a_retry_without_a_target_is_a_usage_error(valkey_url: str, data_dir: Path) -> None:
    with anyio.fail_after(60):
        ran = await crawlog(valkey_url, data_dir, "retry", "--job", "j", "--reason", "r")
    assert ran.returncode == 2 and "give a TASK to retry, or --failed" in ran.stderr
