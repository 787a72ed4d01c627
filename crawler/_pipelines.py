"""Item pipelines: what a spider's items go through before they are recorded.

A spider's ``pipelines`` is a sequence of steps, each run in order on every item the spider
yields (an `Item`, or a dict as the spider yielded it) after it is yielded and before its
``ItemScraped`` event is written::

    async def require_price(item, response):
        if not item.get("price"):
            raise DropItem("no price")      # dropped, counted under "no price"
        return {**item, "price": float(item["price"])}

    class Shop(Spider):
        pipelines = (require_price, Enrich)  # functions, classes or objects

A step is an async function ``(item, response) -> item | None``, or an object (or a class,
made once per worker with no arguments) with ``process_item(self, item, response)``, as
Scrapy's pipelines have; a plain (not async) function or method is taken too. It returns
the item, changed or not, to pass it on; None or `DropItem` drops it, counted by reason in
the page's ``PageFetched.items_dropped`` (Scrapy's own ``DropItem`` is honoured as well).
Any other exception fails the task as a spider's does. What the last step returns is
checked as a spider's output is (`check_output`).

Pipelines run in the worker, as part of the page: a page redone after a kill runs them again
(its items are keyed, so each is still recorded once). A step with a side effect that must
not repeat runs it through ``response.once``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, TypeAlias
from weakref import WeakKeyDictionary

from crawler._spider import Item, Response, Spider, SpiderOutputError
from eventlog import ConfigError, CrawlogError

PIPELINE_METHOD: Final = "process_item"
"""The method a pipeline object (Scrapy's, or one of crawlog's) is called by."""
DROP_REASON_MAX: Final = 200
"""Characters of a drop's reason kept as its count's key in the log."""
_SCRAPY_DROP: Final = ("scrapy.exceptions", "DropItem")
"""Scrapy's ``DropItem`` (module, name): recognised without importing Scrapy."""

Step: TypeAlias = Callable[[Any, Response], Awaitable[Any] | Any]
"""One pipeline step, as called: ``(item, response) -> item | None`` (awaited if it must)."""


class DropItem(CrawlogError):
    """Raised by a pipeline step: the item is not recorded; ``str(exc)`` is the reason its
    drop is counted under (the step's name if empty)."""


class Pipeline:
    """A spider's pipeline steps, resolved once per worker (`pipeline_of`)."""

    __slots__ = ("names", "steps")

    def __init__(self, steps: Sequence[Step], names: Sequence[str]) -> None:
        self.steps = tuple(steps)
        self.names = tuple(names)

    def __bool__(self) -> bool:
        return bool(self.steps)

    async def run(self, item: Any, response: Response) -> Any | Dropped:
        """``item`` through every step in order: what the last one returns, or `Dropped`
        with the reason. Exceptions other than a drop propagate (the task fails)."""
        for step, name in zip(self.steps, self.names, strict=True):
            try:
                result = step(item, response)
                if inspect.isawaitable(result):
                    result = await result
            except DropItem as drop:
                return Dropped(_reason(drop, name))
            except Exception as exc:
                if (type(exc).__module__, type(exc).__name__) == _SCRAPY_DROP:
                    return Dropped(_reason(exc, name))
                raise
            if result is None:
                return Dropped(f"dropped by {name}")
            if not isinstance(result, Item | Mapping):
                raise SpiderOutputError(
                    f"pipeline {name} on {response.url} returned {type(result).__name__}: "
                    "expected an Item, a dict or None (to drop the item)"
                )
            item = result
        return item


class Dropped:
    """An item a pipeline step dropped, and why."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def is_item(output: object) -> bool:
    """Whether a spider's output is an item (what pipelines take): an Item or a mapping."""
    return isinstance(output, Item | Mapping)


_resolved: WeakKeyDictionary[Spider, Pipeline] = WeakKeyDictionary()
"""Each spider's pipeline, once made: a class among its steps is made once per spider
(`load_spider` checks them, then the worker runs them)."""


def pipeline_of(spider: Spider) -> Pipeline:
    """The spider's ``pipelines`` as steps; ConfigError naming the spider if one is neither
    callable nor has ``process_item``, or a class among them cannot be made."""
    if (made := _resolved.get(spider)) is not None:
        return made
    made = _resolve(spider)
    _resolved[spider] = made
    return made


def _resolve(spider: Spider) -> Pipeline:
    declared = getattr(spider, "pipelines", ()) or ()
    if callable(declared) or isinstance(declared, str | bytes | Mapping):
        declared = (declared,)  # `pipelines = clean`: one step, not a sequence of them
    steps: list[Step] = []
    names: list[str] = []
    for entry in declared:
        target = entry
        if inspect.isclass(entry) and hasattr(entry, PIPELINE_METHOD):
            try:
                target = entry()
            except Exception as exc:
                raise ConfigError(
                    f"spider {spider.name}: pipeline {entry.__name__}() failed ({exc})"
                ) from None
        method = getattr(target, PIPELINE_METHOD, None)
        if callable(method) and not inspect.isclass(target):
            steps.append(method)
            names.append(type(target).__name__)
        elif callable(target) and not inspect.isclass(target):
            steps.append(target)
            names.append(getattr(target, "__qualname__", None) or repr(target))
        else:
            raise ConfigError(
                f"spider {spider.name}: pipeline {entry!r} is neither a function "
                f"(item, response) nor has a {PIPELINE_METHOD}(item, response) method"
            )
    return Pipeline(steps, names)


def _reason(exc: BaseException, name: str) -> str:
    reason = " ".join(str(exc).split()) or f"dropped by {name}"
    return reason[:DROP_REASON_MAX]
