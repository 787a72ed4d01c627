"""The spider API: what a crawl does with a page.

A spider is a class with a ``name``, ``start_urls`` and ``async def parse(self, response)``
that yields what it found::

    class Listings(Spider):
        name = "listings"
        start_urls = ("https://shop.example/list?page=1",)

        async def parse(self, response):
            for row in rows(response.body):
                yield Item(row.sku, {"price": row.price})   # output, keyed
            for href in detail_links(response.body):
                yield Follow(href)                          # a new task
            if (nxt := next_page(response.body)):
                yield NextPage(nxt)                         # the same task's next page

After each page the worker appends the page's events and a checkpoint (page number, next
URL, last item key) in one fenced step; a task killed at page k resumes at page k + 1,
``response.resume`` telling the spider where it stopped. Output is keyed, so a redone page
writes each key once.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, TypeVar

import msgspec

from crawler._links import parse_page
from eventlog import ConfigError, Cursor

T = TypeVar("T")
HTML_TYPES = ("text/html", "application/xhtml+xml")


class Item(msgspec.Struct, frozen=True):
    """An output record: its ``key`` makes it exactly-once across refetches."""

    key: str
    data: dict[str, Any] = msgspec.field(default_factory=dict)


class Follow(msgspec.Struct, frozen=True):
    """A link to crawl as a new task (kept only if in scope and within depth)."""

    url: str
    priority: int = 0


class NextPage(msgspec.Struct, frozen=True):
    """The next page of this same task; ``cursor`` comes back in ``response.resume.state``."""

    url: str
    cursor: str | None = None


Output = Item | Follow | NextPage
Once = Callable[[str, Callable[[], Awaitable[T]]], Awaitable[T | None]]


class Response:
    """A fetched page, as a spider sees it."""

    __slots__ = (
        "_once", "body", "content_type", "depth", "elapsed_ms", "headers", "page", "resume",
        "status", "task_id", "url",
    )  # fmt: skip

    def __init__(
        self,
        *,
        url: str,
        status: int,
        headers: dict[str, str],
        body: bytes,
        elapsed_ms: float,
        task_id: str,
        depth: int,
        page: int,
        resume: Cursor | None,
        once: Callable[[str, Callable[[], Awaitable[Any]]], Awaitable[Any]],
    ) -> None:
        self.url, self.status, self.headers, self.body = url, status, headers, body
        self.elapsed_ms, self.task_id, self.depth, self.page = elapsed_ms, task_id, depth, page
        self.resume = resume
        """The checkpoint this task resumed from (None on its first run)."""
        self.content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        self._once = once

    @property
    def charset(self) -> str | None:
        """The charset the Content-Type header names, if any."""
        for part in self.headers.get("content-type", "").split(";")[1:]:
            name, _, value = part.strip().partition("=")
            if name.lower() == "charset" and value:
                return value.strip('"')
        return None

    def text(self) -> str:
        """The body decoded with the header's charset (else UTF-8), never raising."""
        try:
            return self.body.decode(self.charset or "utf-8", errors="replace")
        except (LookupError, UnicodeError):  # unknown, or a codec that cannot replace
            return self.body.decode("utf-8", errors="replace")

    async def once(self, action_id: str, action: Callable[[], Awaitable[T]]) -> T | None:
        """Run ``action`` exactly once for this task, whatever crashes and resumes happen.

        An intent event is written before it and a done event after. On resume a done
        action is skipped (returns None); an intent without done stops the task as paused
        ("uncertain action") for a person to decide, since it may or may not have run.
        """
        return await self._once(action_id, action)  # type: ignore[no-any-return]


class Spider:
    """Base class of spiders: override ``parse``."""

    name: ClassVar[str] = "spider"
    start_urls: ClassVar[Sequence[str]] = ()

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        """What the page yields: items, links to follow, the next page."""
        if False:  # pragma: no cover - an empty async generator
            yield Item("")


class SiteSpider(Spider):
    """The default spider: follows every link (the worker keeps those in scope and depth)
    and records one item per page: url, status, content type, bytes, title, content hash."""

    name = "site"

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        page = (
            parse_page(response.body, response.url, charset=response.charset)
            if response.content_type in HTML_TYPES
            else None
        )
        yield Item(
            response.url,
            {
                "url": response.url,
                "status": response.status,
                "content_type": response.content_type,
                "bytes": len(response.body),
                "title": page.title if page else None,
                "content_hash": hashlib.blake2b(response.body, digest_size=16).hexdigest(),
            },
        )
        for link in page.links if page else ():
            yield Follow(link)


def load_spider(path: str | None) -> Spider:
    """The spider ``MODULE:CLASS`` or ``FILE.py:CLASS`` (the default site spider for None).

    MODULE is imported as ``python -m`` would: from the working directory first, then
    PYTHONPATH and the installed packages. FILE is a path to a Python file (relative to the
    working directory), imported by path with its own directory on ``sys.path`` so that it
    can import the modules beside it. ``ConfigError`` naming what to do when either fails.
    """
    if path is None:
        return SiteSpider()
    source, _, class_name = path.rpartition(":")
    if not source or not class_name:
        raise ConfigError(
            f"--spider {path!r}: expected MODULE:CLASS or FILE.py:CLASS, e.g. myspiders:Shop "
            "or spiders/shop.py:Shop"
        )
    module = _import_file(path, Path(source)) if _is_file(source) else _import(path, source)
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type) or not hasattr(cls, "parse"):
        raise ConfigError(f"--spider {path!r}: {source} has no spider class {class_name}")
    try:
        spider = cls()
    except Exception as exc:
        raise ConfigError(f"--spider {path!r}: {class_name}() failed ({exc})") from None
    return spider  # type: ignore[no-any-return]


def spider_path(path: str | None) -> str | None:
    """``path`` as a job stores it: a spider file made absolute, so that every worker (and a
    resume from another directory) imports the same file; MODULE:CLASS as it is."""
    if path is None:
        return None
    if not is_spider_file(path):
        return path
    source, _, class_name = path.rpartition(":")
    return f"{os.path.abspath(Path(source).expanduser())}:{class_name}"


def is_spider_file(path: str) -> bool:
    """Whether ``--spider`` names a file (``FILE.py:CLASS``) rather than ``MODULE:CLASS``."""
    return _is_file(path.rpartition(":")[0])


def _is_file(source: str) -> bool:
    # A module name has neither a path separator nor a .py suffix; a file path has one.
    return source.endswith(".py") or "/" in source or os.sep in source


def _import(path: str, module_name: str) -> ModuleType:
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        # The `crawlog` console script has its own bin directory on sys.path, not the
        # working directory that `python -m crawler.cli` (as workers run) has.
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ConfigError(
            f"--spider {path!r}: cannot import {module_name} ({exc}): "
            + _not_found_hint(module_name, exc.name, path.rpartition(":")[2], cwd)
        ) from None
    except Exception as exc:  # an import runs arbitrary code: report anything it raises
        raise ConfigError(f"--spider {path!r}: cannot import {module_name} ({exc})") from None


def _not_found_hint(module_name: str, missing: str | None, class_name: str, cwd: str) -> str:
    top = module_name.partition(".")[0]
    if missing is not None and missing != module_name and not module_name.startswith(f"{missing}."):
        # The spider's module was found; something it imports is not installed.
        return f"{module_name} imports {missing}, which is not installed where crawlog runs"
    where = f"{top}.py" if top == module_name else f"the package {top}/"
    return (
        f"crawlog imports it from the working directory ({cwd}) and PYTHONPATH: run crawlog "
        f"where {where} is, add that directory to PYTHONPATH, or give the file: "
        f"--spider path/to/{module_name.rpartition('.')[2]}.py:{class_name}"
    )


def _import_file(path: str, file: Path) -> ModuleType:
    file = Path(os.path.abspath(file.expanduser()))
    if not file.is_file():
        raise ConfigError(
            f"--spider {path!r}: no such file {file} (a relative path is taken from the "
            f"working directory, {os.getcwd()})"
        )
    for loaded in list(sys.modules.values()):
        if getattr(loaded, "__file__", None) == str(file):
            return loaded  # already imported by this process (crawl checks it, then runs it)
    name = file.stem if file.stem.isidentifier() and file.stem not in sys.modules else None
    name = name or f"crawlog_spider_{hashlib.blake2b(bytes(file)).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ConfigError(f"--spider {path!r}: {file} cannot be imported as a Python file")
    module = importlib.util.module_from_spec(spec)
    if str(file.parent) not in sys.path:
        sys.path.insert(0, str(file.parent))  # its sibling modules, as `python FILE` has
    # Registered before it runs, as an import would: dataclasses and typing look it up.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # an import runs arbitrary code: report anything it raises
        del sys.modules[name]
        raise ConfigError(f"--spider {path!r}: cannot import {file} ({exc})") from None
    return module
