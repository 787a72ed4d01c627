"""``crawlog export --follow`` of items writes them as the export does: each item's own
object in JSON lines, its fields as columns in CSV (a field first seen later in
``extra_fields``) and in each Parquet part."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from crawler.cli._argv import crawlog_command

pytestmark = pytest.mark.anyio


def crawlog(*args: str | Path) -> str:
    result = subprocess.run(
        crawlog_command(*map(str, args)), capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.timeout(150)  # several crawlog processes, on a loaded machine
async def test_a_feed_in_each_format_holds_the_items_alone(
    projected_items: Path, job: str, tmp_path: Path
) -> None:
    base = ("export", "--job", job, "--data-dir", projected_items, "--what", "items")
    for fmt, name in (("jsonl", "items.jsonl"), ("csv", "items.csv"), ("parquet", "parts")):
        crawlog(*base, "--format", fmt, "--follow", "--until-done", tmp_path / name)
    exported = crawlog(*base, "--format", "jsonl", "-")
    assert (tmp_path / "items.jsonl").read_text() == exported
    assert json.loads(exported.splitlines()[1]) == {
        "price": 3, "stock": {"shop": 2}, "title": "Coffee",
    }  # fmt: skip
    rows = list(csv.reader(io.StringIO((tmp_path / "items.csv").read_text())))
    fields = ["title", "price", "tags", "stock", "on_sale", "note", "key"]
    assert rows[0] == [*fields, "extra_fields"]
    assert rows[2] == ["Coffee", "3", "", '{"shop":2}', "", "", "", ""]
    [part] = sorted((tmp_path / "parts").glob("part-*.parquet"))
    table = pq.read_table(part)
    assert table.column_names == fields
    assert [row["title"] for row in table.to_pylist()] == ['Tea, "green"', "Coffee", None, None]
