"""``crawlog sql``'s views ``changes``, ``runs`` and ``item_changes``: each page's verdict
per run as the archive commits it, each run's counts, and each item's change per run; a
confined query reads them beside the other views."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlog import (
    AnyEvent,
    Change,
    EventLog,
    ItemScraped,
    PageFetched,
    TaskEnqueued,
    Validators,
    connect,
)
from projector import Projector, Store, query

pytestmark = pytest.mark.anyio
A, B, C = "http://a.test/a", "http://a.test/b", "http://a.test/c"
SITE = "http://a.test"


def _page(
    task: str,
    url: str,
    status: int,
    run: int,
    *,
    body_hash: str | None = None,
    change: Change | None = None,
) -> PageFetched:
    return PageFetched(
        actor="w", task_id=task, attempt=1, url=url, status=status, page=1, run=run,
        body_hash=body_hash, change=change,
    )  # fmt: skip


async def test_changes_and_runs_are_views_of_the_committed_archive(
    valkey_url: str, job: str, data_dir: Path
) -> None:
    events: list[AnyEvent] = [
        TaskEnqueued(actor="seed", task_id="a", url=A, site=SITE),
        _page("a", A, 200, 1, body_hash="a1"),
        ItemScraped(actor="w", task_id="a", key="ka", data={"v": 1}),
        TaskEnqueued(actor="seed", task_id="b", url=B, site=SITE),
        _page("b", B, 200, 1, body_hash="b1"),
        ItemScraped(actor="w", task_id="b", key="kb", data={"v": 1}),
        TaskEnqueued(actor="seed", task_id="c", url=C, site=SITE),
        _page("c", C, 200, 1, body_hash="c1"),
        TaskEnqueued(
            actor="recrawl",
            task_id="a2",
            url=A,
            site=SITE,
            run=2,
            revisit=Validators(body_hash="a1"),
        ),
        _page("a2", A, 200, 2, body_hash="a2", change="changed"),
        ItemScraped(actor="w", task_id="a2", key="ka", data={"v": 2}, run=2),
        _page("b2", B, 404, 2, change="gone"),
        _page("c2", C, 304, 2, body_hash="c1", change="unchanged"),
    ]
    async with connect(valkey_url) as client, Projector(client, job, data_dir) as projector:
        await EventLog(client, job).append_many(events)
        await projector.catch_up()
    store = Store(data_dir, job)
    changes = query(
        store,
        "SELECT url, change, run, previous_hash, new_hash FROM changes ORDER BY run, url",
    )
    assert changes.rows == [
        (A, "new", 1, None, "a1"),
        (B, "new", 1, None, "b1"),
        (C, "new", 1, None, "c1"),
        (A, "changed", 2, "a1", "a2"),
        (B, "gone", 2, None, None),
        (C, "unchanged", 2, None, "c1"),
    ]
    runs = query(store, "SELECT run, pages, new, changed, gone, unchanged FROM runs ORDER BY run")
    assert runs.rows == [(1, 3, 3, 0, 0, 0), (2, 3, 0, 1, 1, 1)]
    # Beside the other views, in one query.
    joined = query(store, "SELECT count(*) FROM changes JOIN pages USING (task_id)")
    assert joined.rows == [(6,)]
    items = query(
        store, "SELECT key, change, run, url, data, previous FROM item_changes ORDER BY run, key"
    )
    assert items.rows == [
        ("ka", "added", 1, A, '{"v":1}', None),
        ("kb", "added", 1, B, '{"v":1}', None),
        ("ka", "changed", 2, A, '{"v":2}', '{"v":1}'),
        ("kb", "removed", 2, B, None, '{"v":1}'),
    ]
    fields = query(store, "SELECT data->>'v' FROM item_changes WHERE change = 'changed'")
    assert fields.rows == [("2",)]
