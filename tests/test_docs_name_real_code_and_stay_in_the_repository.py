"""The docs name code that exists and point at nothing outside the repository.

`docs/architecture.md` names each step as `module:function` (or `module:Class.method`, or a
script constant of `eventlog._scripts`): each must be defined in that module, so a rename
that leaves the page behind fails here with the names to update. Read from the source with
`ast`, nothing is imported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]

REFERENCE = re.compile(r"`((?:eventlog|projector|crawler)(?:\.\w+)+):(\w+(?:\.\w+)?)`")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
OUTSIDE_PATH = re.compile(r"`\.\./[^`]*`")


def _defined(module: str) -> dict[str, set[str]]:
    """Top-level names of a module's source, each with the names defined in its body."""
    path = ROOT / Path(*module.split("."))
    source = path.with_suffix(".py") if path.with_suffix(".py").exists() else path / "__init__.py"
    names: dict[str, set[str]] = {}
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[node.name] = set()
        elif isinstance(node, ast.ClassDef):
            names[node.name] = {
                n.name
                for n in node.body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            }
        elif isinstance(node, ast.Assign):
            names.update({t.id: set() for t in node.targets if isinstance(t, ast.Name)})
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = set()
    return names


def test_every_module_function_the_architecture_page_names_exists() -> None:
    references = REFERENCE.findall(ARCHITECTURE.read_text())
    assert len(references) > 20, "the page names its steps as `module:function`"
    missing = []
    for module, name in sorted(set(references)):
        path = ROOT / Path(*module.split("."))
        if not path.with_suffix(".py").exists() and not (path / "__init__.py").exists():
            missing.append(f"{module}:{name} (no module {module})")
            continue
        defined = _defined(module)
        owner, _, member = name.partition(".")
        if owner not in defined or (member and member not in defined[owner]):
            missing.append(f"{module}:{name}")
    assert not missing, f"docs/architecture.md names code that does not exist: {missing}"


def test_the_docs_link_only_to_files_inside_the_repository() -> None:
    wrong = []
    for page in PAGES:
        text = page.read_text()
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto
            resolved = (page.parent / target).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                wrong.append(f"{page.relative_to(ROOT)}: {target}")
        wrong += [f"{page.relative_to(ROOT)}: {p}" for p in OUTSIDE_PATH.findall(text)]
    assert not wrong, f"links to nothing, or to files outside the repository: {wrong}"
