"""``tools/bench_tiny_crawl.py`` run once, as a subprocess: its table, then one JSON line
with the one-page crawl's wall and CPU figures and their targets, and the raw limit beside
them (its dependencies' imports in one bare interpreter). Not a timed test: only that it
measures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(180)
def test_the_tiny_crawl_benchmark_ends_with_its_figures_in_one_json_line() -> None:
    run = subprocess.run(
        [sys.executable, "tools/bench_tiny_crawl.py", "--runs", "1", "--no-scrapy",
         "--no-compile"],
        cwd=ROOT, capture_output=True, text=True, timeout=170,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.strip().splitlines()
    assert any(line.startswith("this ") and "wall_s" in line for line in lines), "a table"
    figures = json.loads(lines[-1])
    assert figures["tiny_crawl_wall_s"] > 0 and figures["tiny_crawl_cpu_s"] > 0
    assert figures["tiny_crawl_s"] == figures["tiny_crawl_wall_s"]
    assert (figures["target_wall_s"], figures["target_cpu_s"]) == (0.4, 0.35)
    assert "scrapy_tiny_wall_s" not in figures
    assert any(line.startswith("imports ") and "cpu_s" in line for line in lines), "the floor"
    assert figures["imports_floor_cpu_s"] > 0
    ratio = figures["tiny_crawl_cpu_s"] / figures["imports_floor_cpu_s"]
    assert figures["tiny_crawl_cpu_vs_imports_floor"] == pytest.approx(ratio, abs=0.01)
