"""One exception tree: every subclass of ``CrawlogError``, wherever it is defined, is drawn
in the tree of ``eventlog/_exceptions.py`` under its real base, with when it happens (and
``[crawler]`` or ``[projector]`` if that package defines it), and its package exports it."""

from __future__ import annotations

import importlib
import re

import eventlog
from eventlog import CrawlogError, _exceptions
from tests.packages import PACKAGES, module_names

NODE = re.compile(r"^(?P<indent>[ │]*)[├└]── (?P<name>\w+)[ .]+(?P<when>\S.*)$")
"""A line of the tree that names a class: its depth is where the branch starts."""
INDENT = 4
"""Characters per level of the drawing."""


def _every_subclass() -> set[type[CrawlogError]]:
    for name in module_names():  # so that subclasses defined anywhere exist
        importlib.import_module(name)
    found: set[type[CrawlogError]] = set()
    pending = [CrawlogError]
    while pending:
        for subclass in pending.pop().__subclasses__():
            if subclass not in found:
                found.add(subclass)
                pending.append(subclass)
    # What a test module might derive is not crawlog's.
    return {error for error in found if error.__module__.split(".")[0] in PACKAGES}


def _drawn_tree() -> dict[str, tuple[str, str]]:
    """Each class drawn → (the class it hangs from, what the drawing says of it)."""
    doc = _exceptions.__doc__ or ""
    lines = doc[doc.index("    CrawlogError\n") :].splitlines()
    parents = ["CrawlogError"]
    drawn: dict[str, tuple[str, str]] = {}
    for line in lines[1:]:
        node = NODE.match(line)
        if node is None:
            continue  # a description carried over to the next line
        depth = len(node["indent"]) // INDENT
        del parents[depth:]
        drawn[node["name"]] = (parents[-1], node["when"])
        parents.append(node["name"])
    return drawn


def test_every_crawlog_error_is_drawn_under_its_base_with_when_it_happens() -> None:
    drawn = _drawn_tree()
    for error in _every_subclass():
        assert error.__name__ in drawn, f"{error.__module__}.{error.__name__} is not drawn"
        parent, when = drawn[error.__name__]
        assert parent == error.__base__.__name__, error
        package = error.__module__.split(".")[0]
        tag = "" if package == "eventlog" else f"[{package}] "
        assert when.startswith(tag) and when[len(tag) :].strip(), (error, when)


def test_the_tree_draws_no_class_that_does_not_exist() -> None:
    names = {error.__name__ for error in _every_subclass()}
    assert set(_drawn_tree()) == names


def test_every_crawlog_error_is_exported_by_the_package_that_defines_it() -> None:
    assert "CrawlogError" in eventlog.__all__
    for error in _every_subclass():
        package = importlib.import_module(error.__module__.split(".")[0])
        assert error.__name__ in package.__all__, f"{package.__name__} does not export {error}"
        assert getattr(package, error.__name__) is error


def test_the_drawing_is_read_as_a_tree() -> None:
    drawn = _drawn_tree()
    assert drawn["ServerUnreachable"][0] == "ServerError"
    assert drawn["UnknownTask"][0] == "OperatorRefused"
    assert drawn["WriterFailed"] == (
        "CrawlogError",
        "[projector] the segment writer process could not write a",
    )
