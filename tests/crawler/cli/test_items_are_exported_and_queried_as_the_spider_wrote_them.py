"""Items are what the spider wrote: ``export --what items`` in JSON lines writes each
item's own object as it was logged, in Parquet a typed column per field; ``crawlog sql``
has an ``items`` view with a column per field (``SELECT title FROM items``), confined to
reading as every query is, beside ``item_events``, each item in its envelope."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawler.cli._argv import crawlog_command
from tests.crawler.cli.test_errors_are_one_line_and_exit_2 import one_line_error

pytestmark = pytest.mark.anyio


def crawlog(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        crawlog_command(*map(str, args)), capture_output=True, text=True, timeout=60, check=False
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.timeout(150)  # several crawlog processes, on a loaded machine
async def test_json_lines_and_parquet_hold_the_items_as_written(
    projected_items: Path, job: str, tmp_path: Path
) -> None:
    base = ("export", "--job", job, "--data-dir", projected_items, "--what", "items")
    lines = ok(crawlog(*base, "--format", "jsonl", "-")).splitlines()
    assert lines == [
        '{"title":"Tea, \\"green\\"","price":4.5,"tags":["x","y"]}',
        '{"price":3,"stock":{"shop":2},"title":"Coffee"}',
        '{"on_sale":true,"note":null,"key":"its own key field"}',
        "{}",
    ]
    out = tmp_path / "items.parquet"
    assert ok(crawlog(*base, "--format", "parquet", out)) == f"exported 4 items to {out}\n"
    table = pq.read_table(out)
    assert table.column_names == ["title", "price", "tags", "stock", "on_sale", "note", "key"]
    types = dict(zip(table.column_names, table.schema.types, strict=True))
    assert (types["title"], types["price"], types["on_sale"]) == (
        pa.string(), pa.float64(), pa.bool_(),
    )  # fmt: skip
    assert types["tags"] == pa.list_(pa.string())
    rows = table.to_pylist()
    assert rows[0]["tags"] == ["x", "y"] and rows[1]["price"] == 3.0
    assert json.loads(rows[1]["stock"]) == {"shop": 2}
    assert rows[3] == dict.fromkeys(table.column_names)
    pages = ("export", "--job", job, "--data-dir", projected_items, "--what", "pages")
    refused = crawlog(*pages, "--format", "jsonl", "--with-meta", "-")
    one_line_error(refused, "--with-meta goes with --what items")


@pytest.mark.timeout(150)
async def test_sql_reads_items_by_their_fields_and_item_events_by_their_envelope(
    projected_items: Path, job: str
) -> None:
    base = ("sql", "--job", job, "--data-dir", projected_items, "--format", "json")
    cheap = ok(crawlog(*base, "SELECT title, price FROM items WHERE price > 4"))
    assert json.loads(cheap) == [{"title": 'Tea, "green"', "price": 4.5}]
    tagged = ok(crawlog(*base, "SELECT list_count(tags) AS n FROM items WHERE tags IS NOT NULL"))
    assert json.loads(tagged) == [{"n": 2}]
    stock = ok(crawlog(*base, "SELECT stock->>'shop' AS shop FROM items WHERE stock IS NOT NULL"))
    assert json.loads(stock) == [{"shop": "2"}]
    keys = ok(crawlog(*base, "SELECT key, data->>'title' AS t FROM item_events ORDER BY key"))
    assert json.loads(keys) == [
        {"key": "a", "t": 'Tea, "green"'},
        {"key": "b", "t": "Coffee"},
        {"key": "c", "t": None},
        {"key": "d", "t": None},
    ]
    # Still confined: the items view is made before the query runs, not by it.
    refused = crawlog(*base[:-2], "COPY (SELECT * FROM items) TO '/tmp/x.csv'")
    one_line_error(refused, "refused")
