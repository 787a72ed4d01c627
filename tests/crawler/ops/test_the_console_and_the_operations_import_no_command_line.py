"""The command line and the console are two front ends on ``crawler.ops``: neither the
console nor the operations import ``crawler.cli`` (at the top, under ``TYPE_CHECKING`` or
in a function), nor click; the operations import no web stack and not the console."""

from __future__ import annotations

import ast

from tests.packages import ROOT, module_name

REFUSED: dict[str, tuple[str, ...]] = {
    "console": ("crawler.cli", "click"),
    "ops": ("crawler.cli", "crawler.console", "click", "starlette", "uvicorn"),
}
"""Per subpackage of ``crawler``, the modules (and their submodules) it must not import."""


def imported_modules(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import in ``source``, relative ones left out."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            # ``from crawler import cli`` imports the subpackage too.
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return sorted(found)


def offenders(sources: dict[str, str], refused: tuple[str, ...]) -> list[str]:
    """``module:line: imports X`` for each import in ``sources`` (module → its source) of a
    refused module or one of its submodules."""
    return [
        f"{name}:{line}: imports {module}"
        for name, source in sources.items()
        for line, module in imported_modules(source)
        if any(module == r or module.startswith(f"{r}.") for r in refused)
    ]


def test_neither_the_console_nor_the_operations_import_the_command_line() -> None:
    for subpackage, refused in REFUSED.items():
        files = sorted((ROOT / "crawler" / subpackage).rglob("*.py"))
        assert files, f"no crawler/{subpackage}"
        assert offenders({module_name(p): p.read_text() for p in files}, refused) == []


def test_an_import_of_the_command_line_is_found_wherever_it_is() -> None:
    source = (
        "from crawler import cli\n"
        "def f():\n"
        "    from crawler.cli.retry import retry_command\n"
        "import click\n"
        "from crawler.ops import OpenJob\n"
    )
    assert [line for line, _ in imported_modules(source)] == [1, 1, 3, 3, 4, 5, 5]
    found = offenders({"x": source}, REFUSED["console"])
    assert [f.split(": ", 1)[1] for f in found] == [
        "imports crawler.cli",
        "imports crawler.cli.retry",
        "imports crawler.cli.retry.retry_command",
        "imports click",
    ]
