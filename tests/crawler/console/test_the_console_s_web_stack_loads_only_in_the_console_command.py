"""Starlette, uvicorn and the console load in ``crawlog console`` only: not when the
command line is imported, not in a worker, not in a crawl before it starts its workers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.crawler.cli.test_cli_startup import RUN_UNTIL_THE_EVENT_LOOP, _modules_after
from tests.crawler.cli_run import CLI_TIMEOUT_S, clean_env, free_port

WEB_STACK = ("starlette", "uvicorn", "crawler.console", "crawler.console._app")


def test_neither_the_command_line_nor_a_worker_nor_a_crawl_imports_the_web_stack(
    tmp_path: Path,
) -> None:
    code = "import crawler.cli, json, sys; print(json.dumps(sorted(sys.modules)))"
    assert _modules_after(code, cwd=tmp_path) & set(WEB_STACK) == set()
    worker = _modules_after(RUN_UNTIL_THE_EVENT_LOOP, "worker", "--job", "w", cwd=tmp_path)
    assert "crawler._worker" in worker  # the command's body did run
    assert worker & set(WEB_STACK) == set()
    stop = RUN_UNTIL_THE_EVENT_LOOP.replace(
        "sorted(sys.modules)))", "sorted(sys.modules)))\n    sys.exit(0)"
    )
    crawl = _modules_after(stop, "crawl", "http://127.0.0.1:9/", "--job", "w", cwd=tmp_path)
    assert crawl & set(WEB_STACK) == set()


def test_the_console_command_does_load_it(tmp_path: Path) -> None:
    # It prints the URL to open before its event loop: the modules are the last line.
    result = subprocess.run(
        [sys.executable, "-c", RUN_UNTIL_THE_EVENT_LOOP, "console", "--job", "w", "--port", "0"],
        cwd=tmp_path, env=clean_env(REDIS_URL=f"redis://127.0.0.1:{free_port()}"),
        capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    said = result.stdout.splitlines()
    # Before the URL, it may run a look-up of the job (its first event loop, cut short).
    assert any(line.startswith("crawlog console: http://127.0.0.1:") for line in said), said
    assert set(WEB_STACK) <= set(json.loads(said[-1]))
