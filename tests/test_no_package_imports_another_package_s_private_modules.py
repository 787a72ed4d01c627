"""Each package is used through its API: no module of eventlog, projector or crawler imports
another top-level package's ``_private`` module, at the top, under ``TYPE_CHECKING`` or in a
function. Within a package anything goes (``crawler.cli`` imports ``crawler._worker``),
except between the subpackages of ``crawler`` (``cli``, ``console``, ``ops``, ``scrapy``,
``testsite``): each uses another only through its public modules and names (the console
imports ``crawler.ops.LiveProgress``, not ``crawler.ops._progress_source``, nor
``crawler.cli.retry._retry_of``). ``tools/public_imports.py`` rewrites imports of another
top-level package's private modules into imports of the public package."""

from __future__ import annotations

import ast

from tests.packages import PACKAGES, ROOT, module_name, source_files

SUBPACKAGES = frozenset(
    p.parent.name
    for p in (ROOT / "crawler").glob("*/__init__.py")
    if not p.parent.name.startswith("_")
)
"""The subpackages of ``crawler``, each used by the others through its public names only."""


def _unit(module: str) -> str:
    """What a module belongs to for this check: its top-level package, or
    ``crawler.SUB`` for a module of one of crawler's subpackages."""
    parts = module.split(".")
    if parts[0] == "crawler" and len(parts) > 1 and parts[1] in SUBPACKAGES:
        return ".".join(parts[:2])
    return parts[0]


def imports_of_private_modules(source: str, importer: str) -> list[tuple[int, str]]:
    """(line, module) of each import in ``source`` (the module ``importer``) of a private
    module of a top-level package other than the importer's own; between crawler's
    subpackages, also of a private module or name of another one (``module.name``)."""
    own = importer.split(".")[0]
    own_unit = _unit(importer)
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [(node.module, None)] + [(node.module, a.name) for a in node.names]
        else:
            continue
        for module, name in modules:
            parts = module.split(".")
            if parts[0] not in PACKAGES:
                continue
            unit = _unit(module)
            if name is None:
                private = any(part.startswith("_") for part in parts)
                if parts[0] != own and private:
                    found.append((node.lineno, module))
                elif parts[0] == own and unit not in (own_unit, own):
                    # A subpackage's private module, from outside it (the parent package's
                    # private modules are open to its subpackages).
                    inner = parts[len(unit.split(".")) :]
                    if any(part.startswith("_") for part in inner):
                        found.append((node.lineno, module))
            elif (
                parts[0] == own
                and unit not in (own_unit, own)
                and name.startswith("_")
                and not any(part.startswith("_") for part in parts)
            ):
                found.append((node.lineno, f"{module}.{name}"))
    return found


def test_no_library_module_imports_another_package_s_private_module() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: imports {module}"
        for path in source_files()
        for line, module in imports_of_private_modules(path.read_text(), module_name(path))
    ]
    assert offenders == []


def test_the_check_finds_such_an_import_wherever_it_is_and_allows_one_within_a_package() -> None:
    source = """
from typing import TYPE_CHECKING

import eventlog._keys
from crawler._worker import Worker
from eventlog import JobKeys
from eventlog._server import ensure_server

if TYPE_CHECKING:
    from projector._store import Store

def run() -> None:
    from crawler.cli._processes import crawlog_command
"""
    found = imports_of_private_modules(source, "projector._x")
    assert found == [
        (4, "eventlog._keys"),
        (5, "crawler._worker"),
        (7, "eventlog._server"),
        (13, "crawler.cli._processes"),
    ]
    assert (10, "projector._store") not in found  # the importer's own package
    assert imports_of_private_modules(source, "crawler.cli.jobs") == [
        (4, "eventlog._keys"),
        (7, "eventlog._server"),
        (10, "projector._store"),
    ]


def test_between_crawler_s_subpackages_only_public_modules_and_names_are_imported() -> None:
    source = """
from crawler._job import load_config
from crawler.ops import LiveProgress
from crawler.ops._progress import Tracker
from crawler.cli.retry import RETRY_BATCH, _retry_of
import crawler.cli._operator
from crawler.console import _pages
"""
    assert imports_of_private_modules(source, "crawler.console._live") == [
        (4, "crawler.ops._progress"),
        (5, "crawler.cli.retry._retry_of"),
        (6, "crawler.cli._operator"),
    ]
    assert imports_of_private_modules(source, "crawler.cli._x") == [
        (4, "crawler.ops._progress"),
        (7, "crawler.console._pages"),
    ]
    assert imports_of_private_modules(source, "crawler._worker") == [
        (4, "crawler.ops._progress"),
        (5, "crawler.cli.retry._retry_of"),
        (6, "crawler.cli._operator"),
        (7, "crawler.console._pages"),
    ]
    assert {"cli", "console", "ops", "scrapy", "testsite"} <= SUBPACKAGES


def test_the_files_walked_are_every_module_of_the_three_packages() -> None:
    walked = {module_name(p) for p in source_files()}
    assert {"eventlog", "projector", "crawler", "crawler.cli", "crawler.testsite"} <= walked
    assert {"crawler.cli._main", "crawler.testsite._invariants", "projector._fold"} <= walked
