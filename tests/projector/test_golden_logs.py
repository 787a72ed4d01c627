"""Recorded logs fold, after every change, to the state recorded with them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec
import pytest

from projector._archive import read_entries
from projector._fold import fold

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
LOGS = sorted(GOLDEN.glob("*.parquet"))


def test_there_are_golden_logs() -> None:
    assert {p.stem for p in LOGS} >= {"scripted-crawl", "scripted-release", "demo-kill-and-resume"}


@pytest.mark.parametrize("log_path", LOGS, ids=[p.stem for p in LOGS])
def test_golden_log_folds_to_its_recorded_state(log_path: Path) -> None:
    expected = json.loads(log_path.with_suffix(".state.json").read_text())
    state = msgspec.to_builtins(fold(read_entries(log_path)), order="deterministic")
    assert json.loads(json.dumps(state)) == expected, (
        f"{log_path.name} no longer folds to what it did when recorded. If the change is "
        f"intended: {sys.executable} tools/record_golden.py --update-expected, and review the diff"
    )
