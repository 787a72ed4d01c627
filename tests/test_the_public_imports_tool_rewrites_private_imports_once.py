"""``tools/public_imports.py`` turns another package's private imports into imports of its
API, in place (lazy ones stay lazy), merged into the block's import of that package; what
the API does not export is named and left alone; a second run changes nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.packages import ROOT

TOOL = ROOT / "tools" / "public_imports.py"

FILES = {
    "eventlog/__init__.py": '__all__ = ["ConfigError", "JobKeys", "ensure_server"]\n',
    "pyproject.toml": "[tool.ruff]\nline-length = 100\n",
    "eventlog/_exceptions.py": "",
    "eventlog/_keys.py": "",
    "eventlog/_server.py": "",
    "crawler/_worker.py": "",
    "crawler/cli/_main.py": "",
    "eventlog/_queue.py": "from eventlog._keys import JobKeys\n",
    "crawler/__init__.py": '__all__ = ["Worker"]\n',
    "crawler/cli/__init__.py": '__all__ = ["main"]\n',
    "crawler/cli/jobs.py": """\
from typing import TYPE_CHECKING

from crawler._worker import Worker
from eventlog import JobKeys
from eventlog._exceptions import ConfigError
from eventlog._server import ensure_server, valkey_binary

if TYPE_CHECKING:
    from eventlog._keys import JobKeys as Keys


def run() -> None:
    from eventlog._server import ensure_server

    print(Worker, JobKeys, ConfigError, ensure_server, Keys, valkey_binary)
""",
    "tools/bench.py": "from crawler._worker import Worker\nfrom crawler.cli._main import main\n",
}

REWRITTEN = """\
from typing import TYPE_CHECKING

from crawler._worker import Worker
from eventlog import ConfigError, JobKeys
from eventlog._server import ensure_server, valkey_binary

if TYPE_CHECKING:
    from eventlog import JobKeys as Keys


def run() -> None:
    from eventlog import ensure_server

    print(Worker, JobKeys, ConfigError, ensure_server, Keys, valkey_binary)
"""


def _tool(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOOL), "--root", str(root), *args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*.py"))}


def test_private_imports_become_public_ones_once(tmp_path: Path) -> None:
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)

    first = _tool(tmp_path)
    after = _tree(tmp_path)
    assert after["crawler/cli/jobs.py"] == REWRITTEN
    assert after["tools/bench.py"] == "from crawler import Worker\nfrom crawler.cli import main\n"
    assert after["eventlog/_queue.py"] == FILES["eventlog/_queue.py"]  # within its package
    # valkey_binary is not in eventlog's API: the whole import is left for a person.
    assert first.returncode == 1
    assert "crawler/cli/jobs.py:6: eventlog does not export valkey_binary" in first.stderr
    assert "rewrote 5 private import(s) in 2 file(s)" in first.stdout

    second = _tool(tmp_path)
    assert _tree(tmp_path) == after
    assert "rewrote 0 private import(s)" in second.stdout


def test_check_writes_nothing_and_fails_while_something_would_change(tmp_path: Path) -> None:
    (tmp_path / "eventlog").mkdir()
    (tmp_path / "eventlog/__init__.py").write_text('__all__ = ["JobKeys"]\n')
    (tmp_path / "projector").mkdir()
    module = tmp_path / "projector/_store.py"
    module.write_text("from eventlog._keys import JobKeys\n")

    checked = _tool(tmp_path, "--check")
    assert checked.returncode == 1
    assert "would rewrite 1 private import(s) in 1 file(s)" in checked.stdout
    assert module.read_text() == "from eventlog._keys import JobKeys\n"

    assert _tool(tmp_path).returncode == 0
    assert module.read_text() == "from eventlog import JobKeys\n"
    assert _tool(tmp_path, "--check").returncode == 0
