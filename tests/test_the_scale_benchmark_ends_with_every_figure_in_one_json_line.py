"""``tools/bench_scale.py`` at a tiny size, as a subprocess: its last line is one JSON
object with every figure of issue 16's scale targets, those of the sizes it ran positive
and those of the sizes it did not run null. Not a timed test: only that it measures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIGURES = (
    "projector_bytes_per_task_10m",
    "commit_us_per_event_10k",
    "commit_us_per_event_100k",
    "commit_us_per_event_10m",
    "replay_10m_s",
    "report_10m_tasks_s",
    "history_10m_s",
    "redis_bytes_per_url_1m",
    "seen_bytes_per_url_1m",
    "tiny_crawl_s",
)
PER_SIZE = (
    "projector_bytes_per_task",
    "commit_us_per_event",
    "wall_us_per_event",
    "snapshot_bytes",
    "snapshot_s",
    "replay_s",
    "report_s",
    "history_s",
)


@pytest.mark.timeout(300)
def test_the_scale_benchmark_ends_with_every_figure_in_one_json_line() -> None:
    run = subprocess.run(
        [sys.executable, "tools/bench_scale.py", "--sizes", "2000",
         "--redis-urls", "5000", "--tiny-runs", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=280,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.strip().splitlines()
    assert "rss B/task" in run.stdout and "seen:<n>" in run.stdout, "the tables come first"
    summary = json.loads(lines[-1])
    for figure in FIGURES:
        assert figure in summary
    assert all(summary[f] is None for f in FIGURES if f != "tiny_crawl_s"), "sizes not run"
    assert summary["tiny_crawl_s"] > 0
    size = summary["sizes"]["2000"]
    assert size["tasks"] == 2000 and size["events"] >= 5 * 2000
    for figure in PER_SIZE:
        assert size[figure] > 0, figure
    assert summary["redis_urls"] == 5000
    assert summary["redis_bytes_per_url"] >= summary["seen_bytes_per_url"] > 0
    assert summary["not_run"] == [10_000, 100_000, 1_000_000, 10_000_000]
