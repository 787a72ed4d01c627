"""No two modules of ``projector`` import each other, not even inside a function: the
projector process and every reader go through the read side (``_committed``), and the
report and its SQL way share a model (``_report_model``) instead of importing each other."""

from __future__ import annotations

import ast

from tests.packages import ROOT


def _imports() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in sorted((ROOT / "projector").glob("*.py")):
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
        name = "projector" if path.stem == "__init__" else f"projector.{path.stem}"
        edges[name] = {m for m in imported if m.startswith("projector.")}
    return edges


def _reachable(edges: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(edges.get(start, ()))
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += edges.get(module, ())
    return seen


def test_no_projector_module_reaches_itself_through_its_imports() -> None:
    edges = _imports()
    assert {"projector._committed", "projector._report_model"} <= edges.keys()
    assert sorted(m for m in edges if m in _reachable(edges, m)) == []


def test_the_readers_use_the_read_side_not_the_process() -> None:
    edges = _imports()
    for reader in ("projector._views", "projector._history", "projector._report_sql"):
        assert "projector._projector" not in edges[reader]
    assert "projector._projector" not in _reachable(edges, "projector._committed")
