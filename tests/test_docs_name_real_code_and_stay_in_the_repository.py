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


CODE = re.compile(r"`([^`\s]+)`")
SOURCES = [
    p for package in ("eventlog", "projector", "crawler") for p in (ROOT / package).rglob("*.py")
]


def _private_names() -> set[str]:
    """Every ``_name`` the packages define: module files and top-level or member names."""
    names = {p.stem for p in SOURCES}
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
    return names


def _stale(token: str, files: set[str], private: set[str]) -> bool:
    if "/" in token and re.fullmatch(r"[\w./-]+", token) and not token.startswith(".."):
        return not (ROOT / token.rstrip("/")).exists()
    if re.fullmatch(r"_\w+\.py", token):
        return token not in files
    if re.fullmatch(r"_[a-z]\w*(\(\))?", token):
        return token.removesuffix("()") not in private
    return False


def test_every_file_and_private_name_the_architecture_page_mentions_exists() -> None:
    text = ARCHITECTURE.read_text()
    files, private = {p.name for p in SOURCES}, _private_names()
    stale = sorted({t for t in CODE.findall(text) if _stale(t, files, private)})
    assert not stale, f"docs/architecture.md mentions files or names that do not exist: {stale}"


def test_the_architecture_page_has_a_row_for_every_subpackage() -> None:
    text = ARCHITECTURE.read_text()
    packages = sorted(
        str(init.parent.relative_to(ROOT)) + "/"
        for package in ("eventlog", "projector", "crawler")
        for init in (ROOT / package).rglob("__init__.py")
    )
    missing = [p for p in packages if f"| `{p}`" not in text]
    assert not missing, f"docs/architecture.md has no row in its package table for {missing}"
