"""A broken crawlog.toml does not keep ``--help`` from showing: the help reads no setting.
The one-line error comes only for a command that runs (tests/crawler/cli/
test_bad_config_file_is_one_clear_error.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.crawler.cli_run import crawlog

BROKEN = "[job]\nworkers = \n"


@pytest.mark.parametrize(
    "command", [["--help"], [], ["crawl", "--help"], ["pause", "-h"]], ids=" ".join
)
def test_help_shows_beside_a_broken_config_file(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "crawlog.toml").write_text(BROKEN)

    result = crawlog(*command, cwd=tmp_path)

    assert result.returncode in (0, 2) and "Usage: crawlog" in result.stdout + result.stderr
    assert "crawlog: error" not in result.stderr


def test_a_command_that_runs_beside_it_still_says_the_file_is_broken(tmp_path: Path) -> None:
    (tmp_path / "crawlog.toml").write_text(BROKEN)

    result = crawlog("config", cwd=tmp_path)

    assert result.returncode == 2
    assert result.stderr.startswith("crawlog: error: crawlog.toml: ")
