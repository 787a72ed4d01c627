"""`crawlog demo` crawls the test site, SIGKILLs a worker mid-crawl, and proves from the
site's request log and the event log that nothing was lost or done twice."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from crawler.cli._argv import crawlog_command


def test_demo_kills_a_worker_and_every_invariant_holds(valkey_url: str, tmp_path: Path) -> None:
    result = subprocess.run(
        crawlog_command(
            "demo",
            "--pages",
            "300",
            "--data-dir",
            str(tmp_path),
        ),
        env={**os.environ, "REDIS_URL": valkey_url},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "killed w1 with SIGKILL" in out
    assert "lost: 0" in out
    assert "replay --verify at" in out and "identical" in out
    assert "every invariant holds" in out
    assert "FAIL" not in out
