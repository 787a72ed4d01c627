"""A short chaos run (``tools/chaos.py``): each quick kind of fault once, during a real crawl of the
test site — a worker SIGKILLed, one SIGSTOPped past its lease, the projector and the Valkey
server SIGKILLed, a reply lost after the server applied the command, a delayed connection,
the server out of memory for seconds, a second projector on another data directory — and
the invariants hold: nothing lost, nothing written twice, replay identical, the second
projector refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LEASE_S = 3.0
KINDS = (
    "kill_worker",
    "stop_worker",
    "kill_projector",
    "kill_valkey",
    "lose_reply",
    "delay",
    "oom_window",
    "second_projector",
)
"""The quick kinds: ``damage_file`` (a projector killed, a repair), ``kill_primary``,
``kill_primary_local`` and ``lose_store`` (side crawls) take their time, and run in
``--rounds 10``."""


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_short_chaos_run_keeps_every_invariant(tmp_path: Path) -> None:
    # The chaos run starts (and SIGKILLs) its own server: REDIS_URL must not leak in.
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "chaos.py"),
            "--rounds",
            str(len(KINDS)),
            "--kinds",
            ",".join(KINDS),
            "--seed",
            "7",
            "--pages",
            "2000",
            "--data-dir",
            str(tmp_path / "chaos"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=220,
    )
    out = result.stdout
    assert result.stdout.strip(), result.stderr
    figures = json.loads(out.strip().splitlines()[-1])
    context = out[-6000:] + result.stderr[-3000:]
    assert figures["rounds"] == len(KINDS), context
    # Every kind once: the first rounds cycle through all of them.
    assert set(figures["faults"]) == set(KINDS), context
    assert figures["faults_failed"] == 0, context
    assert figures["lost_pages"] == 0, context
    assert figures["duplicate_items"] == 0, context
    assert figures["stuck_tasks"] == 0, context
    assert figures["anomalies"] == 0, context
    assert figures["replay_identical"] is True, context
    assert figures["acked_events_lost"] == 0, context
    assert figures["refetched_pages"] <= figures["inflight_at_kills"], context
    assert "FAIL refetches only among in-flight tasks" not in out, context
    assert "FAIL Redis memory bounded" not in out, context
    # A killed worker's tasks are taken back once its lease lapses, by the next look of a
    # living worker: not when the recovery gives up, nor by a restart. The slack is for a
    # loaded machine (the tool's own target, lease + 2 s, is its table's line; this test
    # tells a lease-driven take-back from none).
    assert figures["max_reclaim_s"] <= LEASE_S * 4 + 6.0, context
