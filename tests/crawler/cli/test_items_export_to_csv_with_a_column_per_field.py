"""``crawlog export --what items --format csv`` writes one column per item field: the union
of every item's fields in the order the log first shows them, nested values as JSON,
missing ones empty, between the key and task columns and the view's others."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from crawler.cli._argv import crawlog_command
from eventlog import AnyEvent, EventLog, ItemScraped, TaskClaimed, TaskEnqueued
from projector._projector import Projector
from tests.server_helpers import clean_env

pytestmark = pytest.mark.anyio
SITE = "http://site.test"
ITEMS: list[tuple[str, dict[str, Any]]] = [
    ("a", {"title": 'Tea, "green"', "price": 4.5, "tags": ["x", "y"]}),
    ("b", {"price": 3, "stock": {"shop": 2}, "title": "Coffee"}),
    ("a", {"title": "the same key again: not exported"}),
    ("c", {"on_sale": True, "note": None, "key": "its own key field"}),
    ("d", {}),
]


def crawl() -> list[AnyEvent]:
    events: list[AnyEvent] = [
        TaskEnqueued(actor="seed", task_id="t1", url=f"{SITE}/", site=SITE),
        TaskClaimed(actor="w1", task_id="t1", attempt=1),
    ]
    events += [ItemScraped(actor="w1", task_id="t1", key=k, data=d) for k, d in ITEMS]
    return events


@pytest.fixture
async def data_dir(
    tmp_path: Path, redis_client: aioredis.Redis, job: str, monkeypatch: pytest.MonkeyPatch
) -> Path:
    clean_env(monkeypatch)
    directory = tmp_path / "data"
    await EventLog(redis_client, job).append_many(crawl())
    async with Projector(redis_client, job, directory) as projector:
        await projector.catch_up()
    return directory


def crawlog(*args: str | Path) -> str:
    result = subprocess.run(
        crawlog_command(*map(str, args)), capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.timeout(150)  # several crawlog processes, on a loaded machine
async def test_items_in_csv_have_a_column_per_field_in_first_seen_order(
    data_dir: Path, job: str, tmp_path: Path
) -> None:
    out = tmp_path / "items.csv"
    base = ("export", "--job", job, "--data-dir", data_dir, "--what", "items", "--format", "csv")
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
