"""A package's lazy names are read from its ``if TYPE_CHECKING:`` imports, aliases included;
anything there that could not be loaded lazily is refused."""

from __future__ import annotations

import pytest

from eventlog._lazy import lazy_names

INIT = """
from typing import TYPE_CHECKING

from crawler._spider import Spider

if TYPE_CHECKING:
    from projector._fold import apply, fold
    from projector._state import State as JobModel

__all__ = ["JobModel", "Spider", "apply", "fold"]
"""


def test_each_type_checking_import_maps_its_name_to_its_module() -> None:
    assert lazy_names(INIT) == {
        "apply": "projector._fold",
        "fold": "projector._fold",
        "JobModel": "projector._state",
    }


def test_a_module_without_type_checking_imports_has_no_lazy_names() -> None:
    assert lazy_names("from crawler._spider import Spider\n") == {}


@pytest.mark.parametrize(
    "statement", ["import projector", "from . import _fold", "from projector import *"]
)
def test_what_cannot_load_lazily_is_refused(statement: str) -> None:
    source = f"if TYPE_CHECKING:\n    {statement}\n"
    with pytest.raises(ValueError, match="TYPE_CHECKING"):
        lazy_names(source)
