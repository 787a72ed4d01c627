"""What a recrawl's projector and its progress start from, a finished job's committed state
(its task and key segments), is read as the Parquet files they are, without importing
Arrow's datasets: that import cost each of them more than the read. A lookup of some tasks
(a filter) still reads only those."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT
from tests.server_helpers import stop_or_kill

pytestmark = pytest.mark.anyio
PAGES = 20
CRAWL_TIMEOUT_S = 60

READ_IN_A_FRESH_PROCESS = """
import sys
from pathlib import Path
from projector import Store, read_committed
from projector._taskstore import read_tasks
store = Store(Path(sys.argv[1]), sys.argv[2])
manifest, state = read_committed(store)
paths = store.task_segment_paths(manifest)
print(len(state.tasks), len(state.item_keys), "pyarrow.dataset" in sys.modules)
some = sorted(state.tasks)[:2]
print(sorted(read_tasks(paths, some)) == some)
"""


async def test_a_finished_job_s_state_is_read_without_importing_datasets(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    async with serve_testsite(pages=PAGES, seed=3) as site:
        try:
            command = crawlog_command(
                "crawl", site.url + "/", "--job", "read", "--data-dir", str(data_dir)
            )  # fmt: skip
            with anyio.fail_after(CRAWL_TIMEOUT_S):
                crawled = await anyio.run_process(command, cwd=ROOT, env=clean_env(), check=False)
        finally:
            stop_or_kill(data_dir)
    assert crawled.returncode == 0, crawled.stderr.decode()
    jobs = data_dir / "jobs" / "read"
    assert list((jobs / "tasks").glob("*.parquet")) and list((jobs / "keys").glob("*.parquet"))

    read = subprocess.run(
        [sys.executable, "-c", READ_IN_A_FRESH_PROCESS, str(data_dir), "read"],
        cwd=ROOT, env=clean_env(), capture_output=True, text=True, check=True,
    )  # fmt: skip

    counts, filtered = read.stdout.splitlines()
    tasks, keys, datasets = counts.split()
    assert int(tasks) >= len(site.reachable) and int(keys) > 0
    assert datasets == "False", "Arrow's datasets imported to read whole segments"
    assert filtered == "True"
