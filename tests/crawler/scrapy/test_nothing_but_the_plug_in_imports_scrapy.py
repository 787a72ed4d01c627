"""Scrapy is an optional extra: no module of crawlog outside ``crawler/scrapy/`` imports it
(or Twisted), and neither importing the packages nor starting a worker loads it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from tests.crawler.cli.test_cli_startup import RUN_UNTIL_THE_EVENT_LOOP, _modules_after
from tests.packages import ROOT, source_files

PLUG_IN = ROOT / "crawler" / "scrapy"
OPTIONAL = {"scrapy", "twisted", "itemadapter"}


def _imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_no_module_outside_the_plug_in_imports_scrapy() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in source_files()
        if PLUG_IN not in path.parents and _imported_roots(path) & OPTIONAL
    ]
    assert offenders == []


def test_importing_every_package_loads_no_scrapy() -> None:
    code = (
        "import json, sys, eventlog, projector, crawler, crawler.cli, crawler.testsite; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    modules = {m.split(".")[0] for m in json.loads(result.stdout)}
    assert modules & OPTIONAL == set()


def test_a_worker_loads_no_scrapy(tmp_path: Path) -> None:
    modules = _modules_after(RUN_UNTIL_THE_EVENT_LOOP, "worker", "--job", "w", cwd=tmp_path)
    assert "crawler._worker" in modules
    assert {m.split(".")[0] for m in modules} & OPTIONAL == set()
