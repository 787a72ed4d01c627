"""``crawlog export --what items --to postgresql://... --table T`` against a real PostgreSQL:
a row per item key with the item as ``data``, its meta, and a typed column per field (a
field named like a meta column in ``NAME_2``, a field only ever null without one); run
again, it writes nothing twice (a table dropped since is made and filled again); its
position is in the database with the rows."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import psycopg
import pytest

from crawler.cli._argv import crawlog_command
from tests.crawler.conftest import ITEMS
from tests.postgres_process import write_counts

pytestmark = pytest.mark.anyio


def crawlog(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        crawlog_command(*map(str, args)), capture_output=True, text=True, timeout=60, check=False
    )


def rows(url: str, query: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as con:
        return con.execute(query).fetchall()


@pytest.mark.timeout(120)
async def test_items_land_once_a_row_per_key_with_typed_columns(
    projected_items: Path, job: str, postgres_url: str
) -> None:
    base = ("export", "--job", job, "--data-dir", projected_items, "--what", "items")
    done = crawlog(*base, "--to", postgres_url, "--table", "shop_items")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("exported 4 items to table shop_items of crawlog@127.0.0.1:")

    columns = rows(
        postgres_url,
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_name = 'shop_items' ORDER BY ordinal_position",
    )
    assert columns == [
        ("key", "text"), ("data", "jsonb"), ("task_id", "text"), ("worker", "text"),
        ("scraped_at", "timestamp with time zone"), ("stream_id", "text"),
        ("title", "text"), ("price", "double precision"), ("tags", "jsonb"),
        ("stock", "jsonb"), ("on_sale", "boolean"), ("key_2", "text"),
    ]  # fmt: skip
    table = rows(
        postgres_url,
        "SELECT key, data, task_id, worker, title, price, tags, stock, on_sale, key_2 "
        "FROM shop_items ORDER BY key",
    )
    first = {key: data for key, data in ITEMS[::-1]}  # the first item of each key
    assert [row[0] for row in table] == ["a", "b", "c", "d"]
    assert [row[1] for row in table] == [first[k] for k in "abcd"]
    assert table[0][2:] == ("t1", "w1", 'Tea, "green"', 4.5, ["x", "y"], None, None, None)
    assert table[1][4:] == ("Coffee", 3.0, None, {"shop": 2}, None, None)
    assert table[2][4:] == (None, None, None, None, True, "its own key field")
    [position] = rows(postgres_url, "SELECT job, table_name, rows FROM crawlog_feed_positions")
    assert position == (job, "shop_items", 4)

    again = crawlog(*base, "--to", postgres_url, "--table", "shop_items")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("exported 0 items"), again.stdout
    assert rows(postgres_url, "SELECT count(*) FROM shop_items") == [(4,)]
    # No row was written twice, not even as an upsert that found it there.
    assert write_counts(postgres_url, "shop_items", inserted=4) == (4, 0)

    # A table dropped is made again, and every item written into it again.
    with psycopg.connect(postgres_url, autocommit=True) as con:
        con.execute("DROP TABLE shop_items")
    remade = crawlog(*base, "--to", postgres_url, "--table", "shop_items")
    assert remade.returncode == 0, remade.stderr
    assert remade.stdout.startswith("exported 4 items"), remade.stdout
    assert rows(postgres_url, "SELECT count(*), count(key_2) FROM shop_items") == [(4, 1)]

    followed = crawlog(
        *base, "--to", postgres_url, "--table", "public.followed", "--follow", "--until-done"
    )
    assert followed.returncode == 0, followed.stderr
    assert "the job ended; 4 items written" in followed.stderr
    assert "public.crawlog_feed_positions" in followed.stderr
    data = rows(postgres_url, "SELECT data FROM followed ORDER BY key")
    assert [row[0] for row in data] == [json.loads(json.dumps(first[k])) for k in "abcd"]


def test_export_s_help_shows_the_postgresql_feed() -> None:
    helped = crawlog("export", "--help")
    assert helped.returncode == 0
    said = " ".join(helped.stdout.split())
    assert "--to postgresql://crawlog@db.example:5432/shop --table books --follow" in said
