"""A one-page crawl's own process reads its progress and its summary without Arrow: the
projector's modules import pyarrow at its first use (``projector._arrow``), and the summary,
read after the projector's last commit (its snapshot holds every event), reads no segment.
Arrow cost that process a tenth of a second of CPU; its projector still imports it, before
it is told to go."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from crawler.testsite import serve_testsite
from tests.crawler.cli_run import CLI_TIMEOUT_S, clean_env

pytestmark = pytest.mark.anyio

# The crawl, in this interpreter: its own process writes down its modules as it exits
# (with os._exit, after the summary); its forked children, other pids, write nothing.
CRAWL_WRITING_ITS_MODULES = """
import json, os, sys
crawl, record, real_exit = os.getpid(), sys.argv.pop(1), os._exit

def exit_writing_modules(status):
    if os.getpid() == crawl:
        with open(record, "w") as out:
            json.dump(sorted(sys.modules), out)
    real_exit(status)

os._exit = exit_writing_modules
from crawler.cli import main
main(sys.argv[1:])
"""


async def test_a_one_page_crawl_s_own_process_imports_no_arrow(
    valkey_url: str, data_dir: Path, job: str, tmp_path: Path
) -> None:
    record = tmp_path / "crawl_modules.json"
    async with serve_testsite(pages=3, seed=1) as site:
        command = [
            sys.executable, "-c", CRAWL_WRITING_ITS_MODULES, str(record),
            "crawl", site.url + "/", "--depth", "0", "--job", job, "--workers", "1",
            "--data-dir", str(data_dir),
        ]  # fmt: skip
        with anyio.fail_after(CLI_TIMEOUT_S):
            crawl = await anyio.run_process(
                command, env=clean_env(REDIS_URL=valkey_url), cwd=tmp_path, check=False
            )
    assert crawl.returncode == 0, crawl.stderr.decode()
    assert "finished" in crawl.stdout.decode() and "1 done" in crawl.stdout.decode()
    modules = set(json.loads(record.read_text()))
    assert "crawler.ops._progress_source" in modules, "it read progress and its summary"
    assert {m for m in modules if m.split(".")[0] == "pyarrow"} == set()
