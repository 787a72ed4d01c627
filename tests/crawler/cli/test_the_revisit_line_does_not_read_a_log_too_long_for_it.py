"""`status` and `report` fold the whole log in Python for their revisit line: past
`REVISIT_SCAN_MAX_EVENTS` committed events they say it is not counted instead of reading
the log (a report of a 10M-task job stays a read of the projector's figures)."""

from __future__ import annotations

from pathlib import Path

import msgspec

from crawler.cli._revisit_text import REVISIT_SCAN_MAX_EVENTS, too_long_to_scan
from projector import Manifest, Store, job_dir


def commit(data_dir: Path, job: str, events: int) -> Store:
    directory = job_dir(data_dir, job)
    directory.mkdir(parents=True)
    manifest = Manifest(job=job, events=events)
    (directory / "manifest.json").write_bytes(msgspec.json.encode(manifest))
    return Store(data_dir, job)


def test_a_log_past_the_bound_is_said_not_counted(tmp_path: Path) -> None:
    store = commit(tmp_path, "big", REVISIT_SCAN_MAX_EVENTS + 1)
    line = too_long_to_scan(store)
    assert line is not None
    assert line.startswith("revisits: not counted here") and "--due" in line


def test_a_log_within_the_bound_is_read(tmp_path: Path) -> None:
    assert too_long_to_scan(commit(tmp_path, "small", REVISIT_SCAN_MAX_EVENTS)) is None
