"""`projector.page_changes`: each page's verdict once per run (a verdict repeated by a
redelivered task is one change), with the hash its revisit compared with and the new one;
a first run, or a log written before runs existed, is every page it fetched ``new``;
`run_summaries` counts them by run."""

from __future__ import annotations

from pathlib import Path

from eventlog import Change, LogEntry, PageFetched, TaskEnqueued, Validators, encode
from projector import listed, page_changes, read_entries, run_summaries

GOLDEN = Path(__file__).resolve().parent.parent / "golden"

A, B, C = "http://a.test/a", "http://a.test/b", "http://a.test/c"


def _entries(*events: PageFetched | TaskEnqueued) -> list[LogEntry]:
    return [LogEntry(f"{n + 1}-0", e, encode(e)) for n, e in enumerate(events)]


def _page(
    task: str,
    url: str,
    status: int,
    *,
    run: int = 1,
    body_hash: str | None = None,
    change: Change | None = None,
) -> PageFetched:
    return PageFetched(
        actor="w", task_id=task, attempt=1, url=url, status=status, page=1, run=run,
        body_hash=body_hash, change=change,
    )  # fmt: skip


def test_each_page_has_one_verdict_per_run_with_its_hashes() -> None:
    revisit = Validators(etag='"1"', body_hash="a1")
    log = _entries(
        _page("a", A, 200, body_hash="a1"),
        _page("b", B, 200, body_hash="b1"),
        _page("c", C, 500),  # no page: no verdict
        TaskEnqueued(actor="r", task_id="a2", url=A, site="http://a.test", run=2, revisit=revisit),
        _page("a2", A, 200, run=2, body_hash="a2", change="changed"),
        _page("a2", A, 200, run=2, body_hash="a2", change="changed"),  # redelivered
        _page("b2", B, 404, run=2, change="gone"),
        _page("c2", C, 200, run=2, body_hash="c2", change="new"),
    )
    first = page_changes(log, run=1)
    assert [(c.url, c.change) for c in first] == [(A, "new"), (B, "new")]
    second = page_changes(log, run=2)
    assert [(c.url, c.change, c.previous_hash, c.new_hash) for c in second] == [
        (A, "changed", "a1", "a2"),
        (B, "gone", None, None),
        (C, "new", None, "c2"),
    ]
    summaries = run_summaries(page_changes(log))
    assert [(s.run, s.pages, s.new, s.changed, s.gone) for s in summaries] == [
        (1, 2, 2, 0, 0),
        (2, 3, 1, 1, 1),
    ]


def test_unchanged_pages_are_listed_only_when_asked_for() -> None:
    log = _entries(
        _page("a2", A, 304, run=2, change="unchanged"),
        _page("b2", B, 200, run=2, change="changed"),
    )
    assert [c.url for c in listed(page_changes(log))] == [B]
    assert [c.url for c in listed(page_changes(log), "all")] == [A, B]


def test_a_golden_log_written_before_runs_is_one_run_of_new_pages() -> None:
    entries = list(read_entries(GOLDEN / "scripted-crawl.parquet"))
    pages = [e.event for e in entries if isinstance(e.event, PageFetched)]
    answered = {p.url for p in pages if 200 <= p.status < 300 and p.page <= 1}
    found = page_changes(entries)
    assert answered and {c.url for c in found} == answered
    assert {(c.run, c.change) for c in found} == {(1, "new")}


def test_a_page_found_at_another_url_is_its_old_url_gone_and_its_new_one_new_once() -> None:
    # Run 1 found /a at /a; run 2's revisit landed on /c (delivered twice: a kill between);
    # run 3 found it at /c again.
    moved = "http://a.test/c"
    log = _entries(
        TaskEnqueued(actor="w", task_id="a", url=A, site="http://a.test"),
        _page("a", A, 200, body_hash="a1"),
        TaskEnqueued(actor="r", task_id="a2", url=A, site="http://a.test", run=2),
        _page("a2", moved, 200, run=2, body_hash="a1", change="changed"),
        _page("a2", moved, 200, run=2, body_hash="a1", change="changed"),
        TaskEnqueued(actor="r", task_id="a3", url=A, site="http://a.test", run=3),
        _page("a3", moved, 304, run=3, body_hash="a1", change="unchanged"),
    )
    assert [(c.run, c.url, c.change) for c in page_changes(log)] == [
        (1, A, "new"),
        (2, A, "gone"),
        (2, moved, "new"),
        (3, moved, "unchanged"),
    ]
