"""`crawlog restore` says, per site, what the store kept and the log never held (cookie
jars of a job crawled with cookies, robots.txt copies of one that obeys them, redirect
claims), and which workers' journals in the data directory give back their writes at the
next crawl."""

from __future__ import annotations

from pathlib import Path

from crawler._job import JobConfig
from crawler.cli.restore import journals_left, not_restored
from eventlog import journal_directory


def test_each_setting_names_what_it_loses_per_site() -> None:
    config = JobConfig(seeds=("http://a.test/",), cookies=True, obey_robots=False)
    lines = not_restored(config, ["http://a.test", "http://b.test"], ["w1"])
    said = "\n".join(lines)
    assert "cookie jar of http://a.test, http://b.test: never logged" in said
    assert "robots.txt" not in said
    assert "redirect claims past a first page" in said
    assert "revisit intervals given to `crawlog recrawl`" in said
    assert "journals of w1" in said
    many = not_restored(JobConfig(seeds=()), [f"http://s{i}.test" for i in range(8)], [])
    assert "robots.txt of http://s0.test" in many[0] and "and 3 more" in many[0]
    assert not any("cookie" in line or "journals" in line for line in many)
    # The settings lost with the store (a flush): each is said as a condition.
    unknown = "\n".join(not_restored(None, ["http://a.test"], []))
    assert "cookie jar of http://a.test (if the job keeps cookies)" in unknown
    assert "robots.txt of http://a.test (if the job obeys it)" in unknown


def test_only_journals_holding_segments_are_named(tmp_path: Path) -> None:
    journal_directory(tmp_path, "w1", "j").mkdir(parents=True)
    (journal_directory(tmp_path, "w1", "j") / "00000001.journal").write_bytes(b"")
    journal_directory(tmp_path, "w2", "j").mkdir(parents=True)  # nothing left in it
    journal_directory(tmp_path, "w3", "other").mkdir(parents=True)
    (journal_directory(tmp_path, "w3", "other") / "00000001.journal").write_bytes(b"")
    assert journals_left(tmp_path, "j") == ["w1"]
