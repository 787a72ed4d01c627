"""The URLs a page's spider yielded that are not crawled (``PageFetched.dropped``) are
counted per task (in all), per site and per job (by reason); a page event written before
the field existed decodes with none."""

from __future__ import annotations

import msgspec

from eventlog import PageFetched, decode, encode
from projector._fold import fold
from tests.projector.strategies import as_entries
from tests.projector.test_fold import SITE, claimed, done, enqueued


def page(n: int, task_id: str = "t1", **dropped: int) -> PageFetched:
    return PageFetched(
        actor="w1",
        task_id=task_id,
        attempt=1,
        url=f"{SITE}/{task_id}?p={n}",
        status=200,
        page=n,
        dropped={reason.replace("_", " "): count for reason, count in dropped.items()},
    )


def test_drops_add_up_per_task_site_and_job() -> None:
    events = [
        enqueued("t1"),
        claimed(task_id="t1"),
        page(1, "t1", out_of_scope=3),
        page(2, "t1"),
        enqueued("t2"),
        claimed(task_id="t2"),
        page(1, "t2", out_of_scope=1, too_deep=2),
        done(task_id="t1"),
        done(task_id="t2"),
    ]
    state = fold(as_entries(events))
    assert (state.tasks["t1"].dropped, state.tasks["t2"].dropped) == (3, 3)
    assert state.sites[SITE].dropped == {"out of scope": 4, "too deep": 2}
    assert state.job.dropped == {"out of scope": 4, "too deep": 2}


def test_a_page_event_of_an_older_log_decodes_with_nothing_dropped() -> None:
    version, fields = msgspec.msgpack.decode(encode(page(1)))  # the envelope
    del fields["dropped"]
    event = decode(msgspec.msgpack.encode([version, fields]))
    assert isinstance(event, PageFetched) and event.dropped == {}
