"""``crawlog export --to postgresql://...`` refuses, in one line with exit 2 and without the
password, a URL that is not PostgreSQL's, a port that is not a number, a server that is not
there, missing or clashing options, and a table it cannot fill; a table made beforehand
with the key and data it needs is fed, into its own column types."""

from __future__ import annotations

import subprocess
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest

from crawler.cli._argv import crawlog_command
from tests.valkey_process import free_port

pytestmark = pytest.mark.anyio


def refused(*args: str | Path) -> str:
    """The one line ``crawlog ARGS`` said on stderr, failing with exit 2."""
    done = subprocess.run(
        crawlog_command(*map(str, args)), capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    [line] = done.stderr.splitlines()
    assert line.startswith("crawlog: error: "), line
    return line


@pytest.mark.timeout(150)  # a dozen crawlog processes, on a loaded machine
async def test_bad_urls_dead_servers_and_wrong_options_are_one_line(
    projected_items: Path, job: str
) -> None:
    base = ("export", "--job", job, "--data-dir", projected_items, "--what", "items")
    said = refused(*base, "--to", "mysql://db/shop", "--table", "t")
    assert "is not a PostgreSQL URL: give postgresql://USER[:PASSWORD]@HOST:PORT/DB" in said
    said = refused(*base, "--to", "postgresql://u@db:five/shop", "--table", "t")
    assert "has the port 'five', not a number" in said
    said = refused(*base, "--to", "postgresql://u@db/shop?nonsense=1", "--table", "t")
    assert "is not a usable PostgreSQL URL (invalid URI query parameter" in said
    said = refused(*base, "--to", "postgresql://u@db/shop", "--table", "db.schema.t")
    assert "is not a table name: give T or SCHEMA.T" in said
    dead = f"postgresql://crawlog:s3cret@127.0.0.1:{free_port()}/shop"
    said = refused(*base, "--to", dead, "--table", "t")
    assert "connecting to table t of crawlog@127.0.0.1:" in said
    assert "Connection refused" in said and "the server runs" in said
    assert "s3cret" not in said
    assert "go together" in refused(*base, "--to", dead)
    assert "go together" in refused(*base, "--table", "t")
    assert "--format is for a file" in refused(
        *base, "--to", dead, "--table", "t", "--format", "csv"
    )
    assert "OUT is for a file" in refused(*base, "--to", dead, "--table", "t", "out.jsonl")
    pages = ("export", "--job", job, "--data-dir", projected_items, "--what", "pages")
    assert "give --what items" in refused(*pages, "--to", dead, "--table", "t")
    assert "give --format" in refused(*base, "out.jsonl")


@pytest.mark.timeout(120)
async def test_a_table_it_cannot_fill_is_refused_and_one_made_beforehand_is_fed(
    projected_items: Path, job: str, postgres_url: str
) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as con:
        con.execute("CREATE TABLE numbered (key integer PRIMARY KEY, data jsonb)")
        con.execute("CREATE TABLE loose (key text, data jsonb)")
        con.execute(
            "CREATE TABLE mine (key text PRIMARY KEY, data jsonb NOT NULL, "
            "price numeric(6, 2), title varchar(100), on_sale integer)"
        )
    base = ("export", "--job", job, "--data-dir", projected_items, "--what", "items")
    said = refused(*base, "--to", postgres_url, "--table", "numbered")
    assert 'cannot take a feed of items: its column "key" is integer, not text' in said
    said = refused(*base, "--to", postgres_url, "--table", "loose")
    assert 'its column "key" has no unique index of its own' in said
    said = refused(*base, "--to", postgres_url, "--table", "nosuchschema.items")
    assert 'schema "nosuchschema" does not exist' in said

    done = subprocess.run(
        crawlog_command(*map(str, base), "--to", postgres_url, "--table", "mine"),
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with psycopg.connect(postgres_url) as con:
        fed = con.execute("SELECT key, price, title, on_sale FROM mine ORDER BY key").fetchall()
    assert fed == [
        ("a", Decimal("4.50"), 'Tea, "green"', None),
        ("b", Decimal("3.00"), "Coffee", None),
        ("c", None, None, None),  # a boolean has no place in an integer column
        ("d", None, None, None),
    ]
