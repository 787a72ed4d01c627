"""``crawlog export --what items --format csv`` writes one column per item field: the union
of every item's fields in the order the log first shows them, nested values as JSON,
missing ones empty; with ``--with-meta``, between the key and task columns and the
envelope's others."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import pytest

from crawler.cli._argv import crawlog_command

pytestmark = pytest.mark.anyio


def crawlog(*args: str | Path) -> str:
    result = subprocess.run(
        crawlog_command(*map(str, args)), capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.timeout(150)  # several crawlog processes, on a loaded machine
async def test_items_with_meta_in_csv_have_a_column_per_field_in_first_seen_order(
    projected_items: Path, job: str, tmp_path: Path
) -> None:
    out = tmp_path / "items.csv"
    base = ("export", "--job", job, "--data-dir", projected_items, "--what", "items",
            "--format", "csv", "--with-meta")  # fmt: skip
    assert crawlog(*base, out) == f"exported 4 items to {out}\n"
    text = out.read_text()
    assert crawlog(*base, "-") == text
    reader = csv.reader(io.StringIO(text))
    header = next(reader)
    fields = ["title", "price", "tags", "stock", "on_sale", "note", "data.key"]
    assert header == ["key", "task_id", *fields, "worker", "epoch_s", "time", "stream_id"]
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["key"] for r in rows] == ["a", "b", "c", "d"]
    assert {r["task_id"] for r in rows} == {"t1"} and {r["worker"] for r in rows} == {"w1"}
    flat = [{f: r[f] for f in fields} for r in rows]
    assert flat[0] == {**dict.fromkeys(fields, ""), "title": 'Tea, "green"', "price": "4.5",
                       "tags": '["x","y"]'}  # fmt: skip
    assert flat[1]["stock"] == '{"shop":2}' and json.loads(flat[1]["stock"]) == {"shop": 2}
    assert (flat[1]["price"], flat[1]["title"], flat[1]["tags"]) == ("3", "Coffee", "")
    assert (flat[2]["on_sale"], flat[2]["note"], flat[2]["data.key"]) == (
        "true",
        "",
        "its own key field",
    )
    assert flat[3] == dict.fromkeys(fields, "")


async def test_items_in_csv_are_their_fields_alone(
    projected_items: Path, job: str, tmp_path: Path
) -> None:
    out = tmp_path / "items.csv"
    base = ("export", "--job", job, "--data-dir", projected_items, "--what", "items")
    assert crawlog(*base, "--format", "csv", out) == f"exported 4 items to {out}\n"
    rows = list(csv.reader(io.StringIO(out.read_text())))
    fields = ["title", "price", "tags", "stock", "on_sale", "note", "key"]
    assert rows == [
        fields,
        ['Tea, "green"', "4.5", '["x","y"]', "", "", "", ""],
        ["Coffee", "3", "", '{"shop":2}', "", "", ""],
        ["", "", "", "", "true", "", "its own key field"],
        [""] * len(fields),
    ]
