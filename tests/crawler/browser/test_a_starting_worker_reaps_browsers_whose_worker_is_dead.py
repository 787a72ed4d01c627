"""`reap_orphans` kills every process of a browser whose worker is dead (the mark in its
profile directory's name), removes its profile, and leaves a live worker's browser alone."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import anyio
import pytest

from crawler._browser import _start_chromium, marked_processes, owner_mark, reap_orphans

pytestmark = pytest.mark.anyio


async def started(executable: str, profile: Path) -> subprocess.Popen[bytes]:
    profile.mkdir(parents=True)
    process = _start_chromium(executable, profile)
    while not (profile / "DevToolsActivePort").exists():  # up, its helpers started
        await anyio.sleep(0.02)
    return process


async def test_browsers_of_dead_workers_are_reaped_and_a_live_one_s_are_not(
    chromium: str, tmp_path: Path
) -> None:
    root = tmp_path / "browsers"
    dead = root / "999999999-1-0"  # a pid above pid_max: no such worker
    live = root / f"{owner_mark()}-0"
    with anyio.fail_after(90):
        orphan = await started(chromium, dead)
        ours = await started(chromium, live)
        try:
            assert set(marked_processes(root).values()) == {dead.name, live.name}
            assert reap_orphans(root) >= 1
            await anyio.to_thread.run_sync(orphan.wait)
            while dead.name in marked_processes(root).values():
                await anyio.sleep(0.05)
            assert set(marked_processes(root).values()) == {live.name}
            assert not dead.exists()
            assert live.exists()
        finally:
            for process in (orphan, ours):
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
