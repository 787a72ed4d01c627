"""The three top-level packages as source files and module names, for the tests that check
how they fit together (imports, exports, the exception tree)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("eventlog", "projector", "crawler")


def source_files() -> Iterator[Path]:
    """Every ``.py`` file of the three packages, subpackages included."""
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def module_name(path: Path) -> str:
    """``crawler/cli/_main.py`` → ``crawler.cli._main``; a package's ``__init__.py`` → it."""
    parts = path.resolve().relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_names() -> list[str]:
    """Every module of the three packages that can be imported without running anything
    (``__main__`` modules run the command line, so they are left out)."""
    return [module_name(p) for p in source_files() if p.name != "__main__.py"]
