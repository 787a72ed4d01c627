"""``crawlog sql`` only reads, and only the job's views: a COPY over the job's own manifest,
``read_csv('/etc/passwd')``, ``ATTACH``, ``INSTALL``, a ``SET`` turning file access back on
are each refused with one line (exit 2), and the job's files are left as they were;
ordinary queries still work; ``--unsafe`` runs the full DuckDB."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from crawler.cli._argv import crawlog_command

pytestmark = pytest.mark.anyio


def _sql(data_dir: Path, job: str, sql: str, *extra: str) -> subprocess.CompletedProcess[str]:
    command = crawlog_command("sql", "--job", job, "--data-dir", str(data_dir), *extra, sql)
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)


def _files(data_dir: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(data_dir.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("attack", "said"),
    [
        ("COPY (SELECT 1) TO '{jobs}/{job}/manifest.json'", "COPY statement"),
        ("SELECT 1; COPY (SELECT 1) TO '{jobs}/{job}/manifest.json'", "COPY statement"),
        ("SELECT * FROM read_csv('/etc/passwd')", '"/etc/passwd"'),
        ("SELECT * FROM read_text('{jobs}/{job}/manifest.json')", "manifest.json"),
        ("SELECT * FROM glob('/etc/*')", '"/etc/*"'),
        ("ATTACH '{jobs}/other.duckdb'", "ATTACH statement"),
        ("INSTALL httpfs", "LOAD statement"),
        ("SET enable_external_access = true", "SET statement"),
        ("CREATE TABLE kept AS SELECT 1", "CREATE statement"),
        ("SELECT * FROM query('COPY (SELECT 1) TO ''{jobs}/x.csv''')", ""),
    ],
)
async def test_an_attack_is_one_line_and_changes_nothing(
    projected_job: Path, job: str, attack: str, said: str
) -> None:
    before = _files(projected_job)
    sql = attack.format(jobs=projected_job / "jobs", job=job)
    result = _sql(projected_job, job, sql)
    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crawlog: error: "), result.stderr
    assert said in lines[0], lines[0]
    assert _files(projected_job) == before


async def test_ordinary_queries_still_work(projected_job: Path, job: str) -> None:
    for sql in (
        "SELECT count(*) AS n FROM pages",
        "FROM items SELECT count(*) AS n",
        "WITH t AS (SELECT * FROM tasks) SELECT count(*) AS n FROM t WHERE status = 'done'",
        "SELECT count(*) AS n FROM events JOIN sites USING (site)",
    ):
        result = _sql(projected_job, job, sql, "--format", "csv")
        assert result.returncode == 0, (sql, result.stderr)
        assert result.stdout.splitlines()[-1] in {"3", "15"}, (sql, result.stdout)
    described = _sql(projected_job, job, "DESCRIBE pages")
    assert described.returncode == 0 and "url" in described.stdout, described.stderr


async def test_unsafe_runs_the_full_duckdb(projected_job: Path, job: str, tmp_path: Path) -> None:
    out = tmp_path / "pages.csv"
    result = _sql(projected_job, job, f"COPY (SELECT url FROM pages) TO '{out}'", "--unsafe")
    assert result.returncode == 0, result.stderr
    assert out.read_text().count("http://site.test/") == 3
