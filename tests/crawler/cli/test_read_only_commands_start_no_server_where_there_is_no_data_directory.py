"""A command that only reads a job (`status`, `report`, `history`, `workers`, ...) run where
there is no data directory creates none and starts no server: one line says where it
looked and how to point it elsewhere, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.crawler.cli_run import clean_env, crawlog
from tests.server_helpers import server_dir

READ_ONLY = [
    ["status", "--job", "j"],
    ["report", "--job", "j"],
    ["history", "--job", "j", "http://127.0.0.1/"],
    ["workers", "--job", "j"],
    ["export", "--job", "j", "--what", "items", "--format", "jsonl", "-"],
]


@pytest.mark.parametrize("command", READ_ONLY, ids=" ".join)
@pytest.mark.parametrize("where", ["default", "flag", "env"])
def test_read_only_commands_start_no_server_where_there_is_no_data_directory(
    tmp_path: Path, command: list[str], where: str
) -> None:
    missing = tmp_path / ("elsewhere" if where != "default" else ".crawlog")
    flag = ["--data-dir", str(missing)] if where == "flag" else []
    env = clean_env(CRAWLOG_HOME=str(missing)) if where == "env" else clean_env()
    with server_dir(missing):  # stops whatever a failing command started there
        result = crawlog(*command, *flag, cwd=tmp_path, env=env)
    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crawlog: error: "), result.stderr
    assert f"no crawlog data directory at {missing}" in lines[0]
    assert "--data-dir" in lines[0] and "CRAWLOG_HOME" in lines[0]
    assert list(tmp_path.iterdir()) == [], "nothing created, no server started"
