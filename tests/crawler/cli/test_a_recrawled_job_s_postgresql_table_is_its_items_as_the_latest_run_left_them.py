"""``crawlog export --what items --to postgresql://... --table T`` of a recrawled job keeps
the table what the ``items`` view lists: an item a run changed is updated to its data now,
one a run removed (its page gone) is deleted, a new one is added, an unchanged one is not
written again; run again, the feed writes nothing twice, and killed inside a batch's
transaction it leaves nothing of that batch. Before, the table stayed the first run's:
each key's first scrape was all the feed read, so daily recrawls fed dashboards the first
day's prices and every page ever removed."""

from __future__ import annotations

import json
import os
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest

from crawler.cli._argv import crawlog_command
from tests.crawler.conftest import ROOT
from tests.crawler.hostile_site import html_page, serve_hostile
from tests.crawler.operator_cli import crawlog_ok
from tests.postgres_process import killed_at_its_position, write_counts

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]
FIRST = ("/", "/a", "/b", "/c")
NOW = ("/", "/a", "/c", "/d")


def _table(url: str, table: str) -> dict[str, Any]:
    with psycopg.connect(url) as con:
        found = con.execute(f"SELECT key, data FROM {table} ORDER BY key").fetchall()
    return {key: data for key, data in found}


async def _crawled_fed_and_recrawled(
    valkey_url: str, data_dir: Path, job: str, feed: tuple[str, ...]
) -> str:
    """The site's URL, once the job crawled it, ``feed`` ran, and a run found /a changed,
    /b gone, the home page changed and /d new."""
    run = partial(crawlog_ok, valkey_url, data_dir)
    routes = {
        "/": html_page("home", "/a", "/b", "/c"),
        "/a": html_page("price 1"),
        "/b": html_page("b"),
        "/c": html_page("c"),
    }
    async with serve_hostile(routes) as site:
        where = ("--job", job, "--workers", "1")
        await run("crawl", site.url + "/", *where, "--delay", "0")
        await run(*feed)
        site.routes["/a"] = html_page("price 2")
        del site.routes["/b"]  # 404 from now on
        site.routes["/"] = html_page("home", "/a", "/b", "/c", "/d")
        site.routes["/d"] = html_page("d")
        await run("recrawl", *where)
    return site.url


async def test_the_table_follows_each_run_s_item_changes_once(
    valkey_url: str, data_dir: Path, job: str, postgres_url: str
) -> None:
    run = partial(crawlog_ok, valkey_url, data_dir)
    feed = ("export", "--job", job, "--what", "items", "--to", postgres_url, "--table", "shop")

    url = await _crawled_fed_and_recrawled(valkey_url, data_dir, job, feed)
    said = await run(*feed)
    now = _table(postgres_url, "shop")
    listed = await run("sql", "--job", job, "--format", "json", "SELECT url FROM items")
    again = await run(*feed)

    assert set(now) == {row["url"] for row in json.loads(listed)}
    assert set(now) == {url + p for p in NOW}, now
    assert said.startswith("exported 4 item changes"), said
    assert again.startswith("exported 0 item changes"), again
    # Run 1's four rows inserted; run 2's: /d inserted, / and /a updated, /b deleted, /c
    # (unchanged, a 304) not written.
    assert write_counts(postgres_url, "shop", inserted=5) == (5, 2)


async def test_a_feed_killed_inside_a_batch_of_changes_leaves_nothing_of_it(
    valkey_url: str, data_dir: Path, job: str, postgres_url: str
) -> None:
    feed = ("export", "--job", job, "--what", "items", "--to", postgres_url, "--table", "held")
    url = await _crawled_fed_and_recrawled(valkey_url, data_dir, job, feed)
    first = _table(postgres_url, "held")
    assert set(first) == {url + p for p in FIRST}
    command = crawlog_command(*feed, "--data-dir", str(data_dir))
    env = {**os.environ, "REDIS_URL": valkey_url}
    await killed_at_its_position(postgres_url, command, env=env, cwd=ROOT)
    with psycopg.connect(postgres_url, autocommit=True) as gate:
        # Its upserts and its delete were undone with its transaction.
        assert _table(postgres_url, "held") == first
        [(rows,)] = gate.execute(
            "SELECT rows FROM crawlog_feed_positions WHERE table_name = 'held'"
        ).fetchall()
        assert rows == len(FIRST)

    again = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
    assert again.returncode == 0, again.stderr
    assert again.stdout.decode().startswith("exported 4 item changes"), again.stdout
    now = _table(postgres_url, "held")
    assert set(now) == {url + p for p in NOW}
    assert now[url + "/a"] != first[url + "/a"] and now[url + "/c"] == first[url + "/c"]
