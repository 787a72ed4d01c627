"""One lazy importer for every package's ``__init__.py``: the names it imports under
``if TYPE_CHECKING:`` load on first use.

A package lists what it loads lazily once, as the imports mypy reads; the importer builds
its name → module map from those same lines of the package's source, so the map mypy
checks and the map Python uses cannot drift apart: the imports are the declaration.

It lives in ``eventlog`` because that is the one package every other may import
(crawler → projector → eventlog): ``projector`` and ``crawler`` depend on it already, and
it depends on neither.
This module imports only the standard library, as the packages' ``__init__``s run it.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, MutableMapping
from pathlib import Path


def lazy_names(source: str) -> dict[str, str]:
    """Each name a module's top-level ``if TYPE_CHECKING:`` block imports → the module it
    comes from (``from projector._fold import apply`` → ``{"apply": "projector._fold"}``).

    Only ``from … import …`` of absolute modules is allowed there: anything else is an
    error, as it could not be loaded lazily."""
    names: dict[str, str] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if not (
                isinstance(statement, ast.ImportFrom)
                and statement.module
                and not statement.level
                and all(alias.name != "*" for alias in statement.names)
            ):
                raise ValueError(
                    f"line {statement.lineno}: only `from package.module import name` can "
                    "stand under `if TYPE_CHECKING:` in a package's __init__"
                )
            for alias in statement.names:
                names[alias.asname or alias.name] = statement.module
    return names


def install_lazy_importer(namespace: MutableMapping[str, object]) -> dict[str, str]:
    """Give the package whose ``globals()`` these are a module ``__getattr__`` that loads
    each name of its ``TYPE_CHECKING`` imports from its module on first use (and keeps it),
    and a ``__dir__`` that lists ``__all__``. Returns the name → module map.

    Call it after ``__all__``: every lazy name must be exported, or it raises ``ImportError``
    (a name loaded lazily but not exported is a mistake nobody would otherwise see)."""
    package = str(namespace["__name__"])
    source = Path(str(namespace["__file__"])).read_text(encoding="utf-8")
    lazy = lazy_names(source)
    exported = namespace.get("__all__")
    if not isinstance(exported, list | tuple):
        raise ImportError(f"{package}: set __all__ before install_lazy_importer(globals())")
    unexported = sorted(set(lazy) - set(exported))
    if unexported:
        raise ImportError(f"{package}: loaded lazily but not in __all__: {unexported}")

    def __getattr__(name: str) -> object:
        module = lazy.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exported})

    hooks: dict[str, Callable[..., object]] = {"__getattr__": __getattr__, "__dir__": __dir__}
    namespace.update(hooks)
    return lazy
