"""A projector killed with SIGKILL at random moments neither loses nor double-counts.

The short version of ``tools/chaos_projector.py`` (20 rounds over 200,000 events there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.timeout(120)
def test_projector_killed_at_random_ends_identical_to_a_fold_of_the_log() -> None:
    # The tool starts its own server: REDIS_URL must not leak in.
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "chaos_projector.py"),
            "--rounds",
            "4",
            "--events",
            "8000",
            "--seed",
            "7",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert result.stdout.strip(), result.stderr
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    context = result.stdout[-3000:] + result.stderr[-3000:]
    assert figures["rounds"] == 4, context
    assert figures["archived_once"], context
    assert figures["state_identical"], context
    assert figures["replay_identical"], context
    # 8,000 events and a failed fetch for one task in ten (eight events a task).
    assert figures["events"] == 8000 + 100, context
    assert figures["duckdb_events"] == figures["duckdb_distinct"] == figures["events"], context
    assert figures["report_identical"] and figures["kept_apart_tasks"] == 100, context
    assert result.returncode == 0, context
