"""A restore notes again the redirect claims its log shows (`redirect_claims`): a task's
first page fetched at another URL than its own claimed that URL, so no task is enqueued for
it after the restore; the same URL in another spelling (its own fingerprint), a later
page, or a second task landing on a URL already claimed, claims nothing new."""

from __future__ import annotations

from pathlib import Path

from eventlog import PageFetched, TaskEnqueued
from projector import redirect_claims
from tests.projector.strategies import as_entries


def fetched(task_id: str, url: str, page: int = 1, run: int = 1) -> PageFetched:
    return PageFetched(
        actor="w1", task_id=task_id, attempt=1, url=url, status=200, page=page, run=run
    )


def landing(url: str, run: int) -> str:
    """A fingerprint as the crawler's, for the test: the URL without its scheme's case."""
    base = url.lower()
    return base if run == 1 else f"{base}#run{run}"


def test_only_first_pages_landed_elsewhere_claim_their_url() -> None:
    claims = redirect_claims(
        [
            fetched("http://s.test/a", "http://s.test/b"),  # redirected: claims b
            fetched("http://s.test/c", "HTTP://S.TEST/C"),  # its own URL, spelled otherwise
            fetched("http://s.test/d", "http://s.test/e", page=2),  # a next page
            fetched("http://s.test/f", "http://s.test/b"),  # b claimed already
            fetched("http://s.test/g#run2", "http://s.test/h", run=2),
        ],
        landing,
    )
    assert claims == {
        "http://s.test/b": "http://s.test/a",
        "http://s.test/h#run2": "http://s.test/g#run2",
    }


def test_the_archive_gives_the_first_pages_fetched_at_another_url(tmp_path: Path) -> None:
    from projector._archive import write_segment
    from projector._restore import archived_landings

    events = [
        TaskEnqueued(actor="seed", task_id="a", url="http://s.test/a", site="http://s.test"),
        TaskEnqueued(actor="seed", task_id="c", url="http://s.test/c", site="http://s.test"),
        fetched("a", "http://s.test/b"),
        fetched("c", "http://s.test/c"),
        fetched("c", "http://s.test/c?page=2", page=2),
    ]
    info = write_segment(tmp_path, as_entries(events))
    landed = archived_landings([tmp_path / info.name])
    assert [(e.task_id, e.url) for e in landed] == [("a", "http://s.test/b")]
