"""`crawlog demo` kills a worker with SIGKILL mid-crawl and proves from the log that
nothing was lost or done twice."""

from __future__ import annotations

import os
import subprocess
import sys


def test_demo_kills_a_worker_and_every_invariant_holds(valkey_url: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "demo", "--tasks", "30", "--pages", "3"],
        env={**os.environ, "REDIS_URL": valkey_url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "killed w1" in out and "with SIGKILL" in out
    assert "listings done:           30/30" in out
    assert "pages recorded:          90/90" in out
    assert "pages lost:              0" in out
    assert "every invariant holds" in out
