"""A command imports only what it uses: a worker started as ``crawlog worker`` pays for
its imports, and a restarted worker's resume is timed from there
(``tools/bench_resume.py``); a crawl forks its workers, which inherit what it imported.
Arrow, DuckDB and Prometheus cost ~0.3 s of its start-up; the HTTP stack (~0.15 s) loads
in a thread once the worker runs, beside its take-back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.crawler.cli_run import CLI_TIMEOUT_S, clean_env, free_port

ANALYTICS = (
    "pyarrow",
    "duckdb",
    "projector._archive",
    "projector._store",
    "projector._projector",
    "projector._views",
    "projector._state_tables",
    "projector._query",
    "projector._export",
    "projector._report",
    "projector._report_model",
    "projector._committed",
    "projector._history",
    "projector._pg_feed",
    "psycopg",
)
"""What reads or writes the projector's archive, or feeds it into PostgreSQL: no worker
needs it."""
OTHER_COMMANDS = (
    "prometheus_client",
    "crawler._metrics",
    "crawler.cli._processes",
    "crawler.testsite._invariants",
    "crawler.ops._progress_source",
    "crawler.cli._progress_view",
)
"""Machinery of commands other than ``worker`` (or of a worker serving metrics)."""
WORKER = ("crawler._worker",)
HTTP_STACK = ("crawler._fetch", "aiohttp", "httpx")
"""What the worker's fetcher imports: in a thread, once the worker's event loop runs."""
SELECTORS = ("parsel", "lxml", "cssselect", "defusedxml")
"""What ``response.css``/``xpath`` and sitemaps need: only a spider that selects, or a crawl
given sitemaps, imports them."""

# Runs the command's body for real, up to where it would start its event loop.
RUN_UNTIL_THE_EVENT_LOOP = """
import json, sys
import anyio

def loaded(*args, **kwargs):
    print(json.dumps(sorted(sys.modules)))

anyio.run = loaded
from crawler.cli import main
main(sys.argv[1:])
"""


def _modules_after(code: str, *args: str, cwd: Path) -> set[str]:
    # An external server that is never reached: nothing is started, nothing connects.
    env = clean_env(REDIS_URL=f"redis://127.0.0.1:{free_port()}")
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[0]))


def test_importing_the_command_line_imports_no_command_s_machinery(tmp_path: Path) -> None:
    code = "import crawler.cli, json, sys; print(json.dumps(sorted(sys.modules)))"
    modules = _modules_after(code, cwd=tmp_path)
    assert "crawler.cli" in modules
    machinery = {*ANALYTICS, *OTHER_COMMANDS, *WORKER, *HTTP_STACK, *SELECTORS, "rich"}
    assert modules & machinery == set()


def test_the_worker_command_imports_no_analytics_stack(tmp_path: Path) -> None:
    modules = _modules_after(RUN_UNTIL_THE_EVENT_LOOP, "worker", "--job", "w", cwd=tmp_path)
    assert set(WORKER) <= modules  # the command's body did run
    assert modules & {*ANALYTICS, *OTHER_COMMANDS, *HTTP_STACK, *SELECTORS} == set()


def test_a_worker_serving_metrics_imports_neither_arrow_nor_duckdb(tmp_path: Path) -> None:
    args = ("worker", "--job", "w", "--metrics-port", str(free_port()))
    modules = _modules_after(RUN_UNTIL_THE_EVENT_LOOP, *args, cwd=tmp_path)
    assert {"crawler._worker", "crawler._metrics", "prometheus_client"} <= modules
    assert modules & set(ANALYTICS) == set()


def _crawl_modules(*extra: str, cwd: Path) -> set[str]:
    # The crawl starts its workers first thing in its event loop: what it imported by then
    # runs before a restarted crawl's first request (tools/bench_restart.py).
    args = ("crawl", "http://127.0.0.1:9/", "--job", "w", *extra)
    # It would go on to sum up the crawl the stub never ran: stop at the event loop.
    code = RUN_UNTIL_THE_EVENT_LOOP.replace(
        "sorted(sys.modules)))", "sorted(sys.modules)))\n    sys.exit(0)"
    )
    modules = _modules_after(code, *args, cwd=cwd)
    assert "crawler.cli._processes" in modules  # the command's body did run
    return modules


PROGRESS = {"crawler.ops._progress_source", "crawler.cli._progress_view", "rich"}


def test_a_crawl_of_one_worker_imports_no_analytics_table_or_http_stack_before_it(
    tmp_path: Path,
) -> None:
    modules = _crawl_modules("--workers", "1", cwd=tmp_path)
    assert modules & {*ANALYTICS, *PROGRESS, *HTTP_STACK, *SELECTORS} == set()


def test_a_crawl_of_two_workers_imports_their_http_stack_once_for_both_and_nothing_else(
    tmp_path: Path,
) -> None:
    modules = _crawl_modules("--workers", "2", cwd=tmp_path)
    assert set(HTTP_STACK) <= modules
    assert modules & {*ANALYTICS, *PROGRESS, *SELECTORS} == set()
