"""pyarrow, imported on first use by the modules that read and write the archive.

Importing pyarrow costs a process a tenth of a second of CPU. A crawl's own process reads
its summary and progress through the projector's store (``read_committed``,
``LiveProgress``), whose modules use Arrow only to read segment files: a small crawl has
none to read after its projector's last commit (the snapshot holds it all), and its crawl
process imported Arrow for nothing. These modules name pyarrow through the proxies below
(the real modules under ``TYPE_CHECKING``), which import it at their first attribute.
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


SMALL_TABLE_ROWS = 4_096
"""Up to this many rows, the archive's and the task and key stores' writers sort, key and
coalesce in Python instead of calling Arrow's compute functions: a short crawl's projector,
whose commits are all small, then never imports ``pyarrow.compute``, which costs a process
more CPU than the Python loops over that many rows. Past it, Arrow's C loops are cheaper."""

pa = LazyModule("pyarrow")
pc = LazyModule("pyarrow.compute")
pq = LazyModule("pyarrow.parquet")
pa_json = LazyModule("pyarrow.json")
