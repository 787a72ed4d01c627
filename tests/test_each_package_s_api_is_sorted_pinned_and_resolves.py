"""Each package's ``__init__.py`` is its API. What can be derived is derived, as httpx's
tests/test_exported_members.py derives ``__all__`` from ``vars()``: ``__all__`` is sorted (as
ruff sorts it) and is exactly the public names the package binds once its lazy ones are
loaded; the lazy names are the ``TYPE_CHECKING`` imports, each resolving to the object its
module defines, through the one importer (:func:`eventlog.install_lazy_importer`). What is
pinned is what a user would notice: the names the docs tell a spider author to import, the
console script, the Scrapy settings' class paths and the root of the error tree. Importing
the APIs loads neither Arrow, DuckDB nor the HTTP stack."""

from __future__ import annotations

import ast
import importlib
import json
import re
import subprocess
import sys
import tomllib
import types

import pytest

from eventlog import install_lazy_importer
from eventlog._lazy import lazy_names
from tests.packages import PACKAGES, ROOT

API_PACKAGES = sorted(
    ".".join(init.parent.relative_to(ROOT).parts)
    for package in PACKAGES
    for init in (ROOT / package).rglob("__init__.py")
)
"""Every package and subpackage, found rather than listed."""

USER_FACING: dict[str, set[str]] = {
    "crawler": {
        "DropItem",
        "DropRequest",
        "Follow",
        "Item",
        "NextPage",
        "OutgoingRequest",
        "Output",
        "Response",
        "SiteSpider",
        "Spider",
        "SpiderOutputError",
    },
    "crawler.cli": {"main"},
    "crawler.scrapy": {"DupeFilter", "ItemPipeline", "PolitenessMiddleware", "Scheduler"},
    "eventlog": {"CrawlogError"},
}
"""What a user writes down: a spider's imports, the console script, the Scrapy settings'
class paths, the error to catch. Dropping or renaming one of these breaks someone's code."""

HEAVY = ("pyarrow", "duckdb", "aiohttp", "httpx", "prometheus_client", "rich")
"""What no importer of a package's API should pay for until it uses the part that needs it."""


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then everything else.
    kind = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return kind, name


def _init_source(package: str) -> str:
    return ROOT.joinpath(*package.split("."), "__init__.py").read_text()


@pytest.mark.parametrize("package", API_PACKAGES)
def test_all_is_sorted_and_is_every_public_name_the_package_binds(package: str) -> None:
    module = importlib.import_module(package)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=_isort_key)
    assert len(set(exported)) == len(exported)
    for name in exported:
        getattr(module, name)  # binds the lazy ones too
    bound = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and name not in {"annotations", "TYPE_CHECKING"}
        and not isinstance(value, types.ModuleType)
    }
    assert bound == set(exported)


@pytest.mark.parametrize("package", sorted(USER_FACING))
def test_the_names_a_user_writes_down_are_exported(package: str) -> None:
    assert USER_FACING[package] <= set(importlib.import_module(package).__all__)


def test_every_import_the_docs_show_is_exported() -> None:
    pattern = re.compile(r"from ((?:eventlog|projector|crawler)[\w.]*) import ([\w, ]+)")
    shown: set[tuple[str, str]] = set()
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for package, names in pattern.findall(page.read_text()):
            shown |= {(package, name.strip()) for name in names.split(",") if name.strip()}
    assert shown
    missing = {
        (package, name)
        for package, name in shown
        if package in API_PACKAGES and name not in importlib.import_module(package).__all__
    }
    assert missing == set()


def test_the_console_script_names_an_exported_function() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    for target in scripts.values():
        package, name = target.split(":")
        assert name in importlib.import_module(package).__all__


@pytest.mark.parametrize("package", API_PACKAGES)
def test_a_lazy_name_is_the_object_its_module_defines(package: str) -> None:
    module = importlib.import_module(package)
    for name, where in lazy_names(_init_source(package)).items():
        assert getattr(module, name) is getattr(importlib.import_module(where), name)


@pytest.mark.parametrize("package", API_PACKAGES)
def test_a_package_with_lazy_names_uses_the_one_importer(package: str) -> None:
    tree = ast.parse(_init_source(package))
    own_hooks = [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name in {"__getattr__", "__dir__"}
    ]
    assert own_hooks == []
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and "install_lazy_importer" in ast.unparse(node.func)
    ]
    assert len(calls) == (1 if lazy_names(_init_source(package)) else 0)


@pytest.mark.parametrize("package", [p for p in API_PACKAGES if lazy_names(_init_source(p))])
def test_an_unknown_name_is_an_attribute_error(package: str) -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_of_that_name'"):
        getattr(importlib.import_module(package), "nothing_of_that_name")  # noqa: B009


def test_a_lazy_name_left_out_of_all_stops_the_import() -> None:
    namespace: dict[str, object] = {
        "__name__": "projector",
        "__file__": str(ROOT / "projector" / "__init__.py"),
        "__all__": ["apply"],
    }
    with pytest.raises(ImportError, match="not in __all__"):
        install_lazy_importer(namespace)


def test_importing_the_apis_loads_no_arrow_duckdb_or_http_stack() -> None:
    code = "import sys, json, eventlog, projector, crawler; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(result.stdout))
    assert {"eventlog", "projector", "crawler"} <= loaded
    assert {m for m in loaded if m.split(".")[0] in HEAVY} == set()
    assert {m for m in loaded if m.startswith("projector.")} == set()
