"""pyarrow, imported on first use by the modules that read and write the archive.

Importing pyarrow costs a process a tenth of a second of CPU. A crawl's own process reads
its summary and progress through the projector's store (``read_committed``,
``LiveProgress``), whose modules use Arrow only to read segment files: a small crawl has
none to read after its projector's last commit (the snapshot holds it all), and its crawl
process imported Arrow for nothing. These modules name pyarrow through the proxies below
(the real modules under ``TYPE_CHECKING``), which import it at their first attribute.

The few compute functions a small commit calls (a segment's shared columns, its index) go
through :func:`compute`, by name: ``pyarrow.compute`` builds a wrapper and a docstring for
each of the library's ~290 functions as it is imported, ~0.03 s of CPU that a one-page
crawl's projector spent for a dozen calls.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """A module imported at the first attribute asked of it."""

    __slots__ = ("_module", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attribute)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


pa = LazyModule("pyarrow")
pc = LazyModule("pyarrow.compute")
pq = LazyModule("pyarrow.parquet")
pa_json = LazyModule("pyarrow.json")


def compute(function: str, *args: Any, options: Any = None) -> Any:
    """Arrow's compute ``function`` of ``args`` (with ``options``, else the function's
    defaults), looked up in Arrow's registry: what each of ``pyarrow.compute``'s wrappers
    calls (``pyarrow.compute.call_function`` is this function), without importing it."""
    from pyarrow._compute import call_function

    return call_function(function, list(args), options)


def struct_field_options(name: str) -> Any:
    """``struct_field``'s options: the child field ``name``."""
    from pyarrow._compute import StructFieldOptions

    return StructFieldOptions(name)


def sorted_by(table: Any, column: str) -> Any:
    """``table.sort_by(column)`` (ascending, nulls last), through :func:`compute`: the
    table's own method imports ``pyarrow.compute``."""
    from pyarrow._compute import SortOptions

    order = compute("sort_indices", table, options=SortOptions([(column, "ascending")]))
    return compute("take", table, order)
