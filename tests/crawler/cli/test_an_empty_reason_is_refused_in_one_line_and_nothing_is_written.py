"""`--reason ""` (or blanks) is refused as the console refuses it: one line, exit 2, and the
log gets no event (a reason is the audit trail)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from eventlog import EventLog
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio

COMMANDS = [
    ("pause",),
    ("pause", "--site", "127.0.0.1:8765"),
    ("resume",),
    ("retry", "http://127.0.0.1:8765/"),
    ("resolve", "--task", "http://127.0.0.1:8765/", "--done"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("reason", ["", "   "], ids=["empty", "blank"])
async def test_an_empty_reason_is_one_line_exit_2_and_no_event(
    command: tuple[str, ...],
    reason: str,
    start_job: Callable[..., Any],
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    await start_job(["http://127.0.0.1:8765/"])
    before = len(await log.read_range())
    with anyio.fail_after(30):
        ran = await crawlog(valkey_url, data_dir, *command, "--job", job, "--reason", reason)
    assert ran.returncode == 2, ran.stdout
    assert ran.stderr == (
        "crawlog: error: a reason is required: it is recorded in the event, and nothing was done\n"
    )
    assert len(await log.read_range()) == before
