"""A bad crawlog.toml stops every command with one line naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.crawler.cli_run import crawlog

BAD = {
    "syntax": ("[job]\nworkers = \n", "line 2"),
    "unknown key": ("[job]\nwrokers = 3\n", "'job.wrokers'"),
    "unknown section": ("[jobs]\nworkers = 3\n", "'jobs.workers'"),
    "wrong type": ('[politeness]\ndelay = "fast"\n', "politeness.delay"),
    "bool as int": ("[politeness]\nignore_robots = 1\n", "politeness.ignore_robots"),
    "out of range": ("[job]\nworkers = 0\n", "job.workers"),
    "not a choice": ('[scope]\nmode = "planet"\n', "scope.mode"),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("command", [["config"], ["crawl", "http://127.0.0.1:9/"]])
def test_a_bad_file_is_one_line_on_stderr_and_exit_2(
    tmp_path: Path, case: str, command: list[str]
) -> None:
    text, names = BAD[case]
    (tmp_path / "crawlog.toml").write_text(text)

    result = crawlog(*command, cwd=tmp_path)

    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("crawlog: error: crawlog.toml: "), lines[0]
    assert names in lines[0]


@pytest.mark.parametrize("command", [["config"], ["crawl", "http://127.0.0.1:9/"]])
def test_a_file_that_is_not_utf8_is_one_line_naming_where(
    tmp_path: Path, command: list[str]
) -> None:
    (tmp_path / "crawlog.toml").write_bytes(b'[job]\nname = "caf\xe9"\n')  # Latin-1

    result = crawlog(*command, cwd=tmp_path)

    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("crawlog: error: crawlog.toml: not UTF-8"), lines[0]
    assert "line 2, column 12" in lines[0]
