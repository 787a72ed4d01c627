"""Each package is used through its API: no module of eventlog, projector or crawler imports
another top-level package's ``_private`` module, at the top, under ``TYPE_CHECKING`` or in a
function. Within a package anything goes (``crawler.cli`` imports ``crawler._worker``).
``tools/public_imports.py`` rewrites such imports into imports of the public package."""

from __future__ import annotations

import ast

from tests.packages import PACKAGES, ROOT, module_name, source_files


def imports_of_private_modules(source: str, importer: str) -> list[tuple[int, str]]:
    """(line, module) of each import in ``source`` (the module ``importer``) of a private
    module of a top-level package other than the importer's own."""
    own = importer.split(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            private = any(part.startswith("_") for part in parts)
            if parts[0] in PACKAGES and parts[0] != own and private:
                found.append((node.lineno, module))
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


def test_the_files_walked_are_every_module_of_the_three_packages() -> None:
    walked = {module_name(p) for p in source_files()}
    assert {"eventlog", "projector", "crawler", "crawler.cli", "crawler.testsite"} <= walked
    assert {"crawler.cli._main", "crawler.testsite._invariants", "projector._fold"} <= walked
