"""Rewrite imports of another package's private modules into imports of its public API.

In a module of ``crawler/`` (or ``tools/``), ``from eventlog._server import ensure_server``
becomes ``from eventlog import ensure_server``, and ``from crawler.cli._processes import
crawlog_command`` in ``tools/`` becomes ``from crawler.cli import crawlog_command``: the
module is cut before its first ``_`` part. Imports within a top-level package
(``crawler.cli`` importing ``crawler._worker``) are left alone. An import is rewritten only
if the public package's ``__all__`` lists every name it takes; the others are listed and the
exit status is 1, so a missing export is added by hand, not guessed. Each import keeps its
place (one inside a function stays there, so what loads lazily still does); ``ruff check
--select I --fix`` then merges it into an existing ``from eventlog import`` of its block and
sorts the block.

Running it again changes nothing: it only ever rewrites private imports, and leaves none
that it can rewrite. ``--check`` writes nothing and exits 1 if anything would change.

    python tools/public_imports.py [--check] [PATH ...]

PATHs default to eventlog/, projector/, crawler/ and tools/.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("eventlog", "projector", "crawler")
"""The top-level packages whose private modules others must not import."""
DEFAULT_PATHS = ("eventlog", "projector", "crawler", "tools")


@dataclass(frozen=True)
class PrivateImport:
    """One ``from <package>._<module> import ...`` in a module of another package."""

    path: Path
    line: int
    """1-based."""
    column: int
    module: str
    public: str
    """The package whose API it should import from: ``module`` cut before its first ``_``."""
    names: tuple[str, ...]


def public_of(module: str) -> str | None:
    """The public package of ``module`` (``crawler.cli._x`` → ``crawler.cli``); None if it
    is public itself."""
    parts = module.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_"):
            return ".".join(parts[:index])
    return None


def owner_of(path: Path, root: Path = ROOT) -> str:
    """The top-level package (or folder, e.g. ``tools``) a source file belongs to."""
    return path.resolve().relative_to(root).parts[0]


def private_imports(path: Path, root: Path = ROOT) -> Iterator[PrivateImport | ast.Import]:
    """Each import in ``path`` of another top-level package's private module: a
    :class:`PrivateImport` for ``from ... import``, the node itself for a plain ``import``
    (which cannot be rewritten by changing its module alone)."""
    owner = owner_of(path, root)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in PACKAGES and top != owner and public_of(alias.name) is not None:
                    yield node
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            top = node.module.split(".")[0]
            public = public_of(node.module)
            if top in PACKAGES and top != owner and public is not None:
                names = tuple(alias.name for alias in node.names)
                yield PrivateImport(path, node.lineno, node.col_offset, node.module, public, names)


@cache
def exported(package: str, root: Path = ROOT) -> frozenset[str]:
    """The names in ``package``'s ``__all__``, read from its source (nothing is imported:
    the tool runs on a tree whose imports may not resolve yet)."""
    init = root.joinpath(*package.split("."), "__init__.py")
    if not init.exists():
        return frozenset()
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            value = getattr(node, "value", None)
            if isinstance(value, ast.List | ast.Tuple):
                return frozenset(
                    e.value
                    for e in value.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                )
    return frozenset()


def rewrite(path: Path, imports: Sequence[PrivateImport]) -> str:
    """``path``'s text with each of ``imports`` taken from its public package instead."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for item in imports:
        text = lines[item.line - 1]
        head = re.compile(rf"from\s+{re.escape(item.module)}(?=\s)")
        match = head.match(text, item.column)
        if match is None:  # a `from` split over lines by a backslash: leave it to a person
            raise ValueError(f"{path}:{item.line}: cannot find `from {item.module}`")
        lines[item.line - 1] = text[: match.start()] + f"from {item.public}" + text[match.end() :]
    return "".join(lines)


def python_files(paths: Sequence[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.py") if ".venv" not in p.parts)
        elif path.suffix == ".py":
            yield path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "paths", nargs="*", type=Path, help="files or folders (default: the packages and tools/)"
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if anything would change"
    )
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    root: Path = args.root.resolve()
    paths = [root / p for p in (args.paths or DEFAULT_PATHS)]
    changed: list[Path] = []
    refused: list[str] = []
    rewritten = 0
    for path in python_files(paths):
        doable: list[PrivateImport] = []
        for item in private_imports(path, root):
            where = path.relative_to(root)
            if isinstance(item, ast.Import):
                refused.append(f"{where}:{item.lineno}: `import` of a private module: use `from`")
                continue
            missing = [n for n in item.names if n not in exported(item.public, root)]
            if missing:
                refused.append(
                    f"{where}:{item.line}: {item.public} does not export {', '.join(missing)} "
                    f"(from {item.module}): add it to {item.public}'s __all__ first"
                )
            else:
                doable.append(item)
        if doable:
            rewritten += len(doable)
            changed.append(path)
            if not args.check:
                path.write_text(rewrite(path, doable), encoding="utf-8")
    if changed and not args.check:
        # Merges each rewritten import into the block's existing import of the same package.
        files = [str(p) for p in changed]
        ruff = [sys.executable, "-m", "ruff", "check", "--select", "I", "--fix", "--quiet"]
        subprocess.run([*ruff, *files], cwd=root, check=False)
    verb = "would rewrite" if args.check else "rewrote"
    print(f"{verb} {rewritten} private import(s) in {len(changed)} file(s)")
    for line in refused:
        print(line, file=sys.stderr)
    return 1 if refused or (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
