"""Request and response hooks: a spider's ``middlewares``, as its ``pipelines`` are for items.

A spider's ``middlewares`` is a sequence of hooks, each an object (or a class, made once
per worker with no arguments) with ``process_request(self, request)``, a
``process_response(self, response)``, or both, as Scrapy's downloader middlewares have
(async or not)::

    class Signed:
        def process_request(self, request):
            request.headers["X-Token"] = sign(request.url)   # changed before it is sent

        async def process_response(self, response):
            if b"captcha" in response.body:
                raise DropRequest("captcha page")            # not parsed, counted by reason

    class Shop(Spider):
        middlewares = (Signed,)

``process_request`` runs in order on each request a worker is about to send (an
`OutgoingRequest`: its method, headers and body may be changed, its URL, the task's
identity, may not), before the politeness wait and the fetch; ``process_response`` runs in
order on each fetched page before the spider's callback. Either returns None to pass on what
it was given (changed in place or not) or what replaces it (an `OutgoingRequest`, a
`Response`), or raises `DropRequest` (Scrapy's ``IgnoreRequest`` is honoured as well): the
request is not sent, or the page not parsed, and the task fails with ``dropped: REASON``,
counted by reason in ``report`` as every failure is (``crawlog retry`` runs it again). Any
other exception fails the task as a spider's does.

Hooks run in the worker, as part of the task: a task redone after a kill runs them again.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final
from weakref import WeakKeyDictionary

from crawler._spider import Response, Spider
from eventlog import ConfigError, CrawlogError

REQUEST_METHOD: Final = "process_request"
RESPONSE_METHOD: Final = "process_response"
DROP_PREFIX: Final = "dropped: "
"""What a dropped request's or response's task failure reason starts with."""
DROP_REASON_MAX: Final = 200
"""Characters of a drop's reason kept in the task's failure."""
_SCRAPY_IGNORE: Final = ("scrapy.exceptions", "IgnoreRequest")
"""Scrapy's ``IgnoreRequest`` (module, name): recognised without importing Scrapy."""


class DropRequest(CrawlogError):
    """Raised by a hook: the request is not sent (or its response not parsed); ``str(exc)``
    is the reason its task fails with (the hook's name if empty)."""


class OutgoingRequest:
    """A request a worker is about to send, as ``process_request`` hooks see it."""

    __slots__ = ("body", "headers", "method", "task_id", "url")

    def __init__(
        self,
        *,
        url: str,
        method: str,
        headers: Mapping[str, str] | None,
        body: bytes | None,
        task_id: str,
    ) -> None:
        self.url = url
        """The task's URL (read, not changed: it is what the task is)."""
        self.method = method
        self.headers: dict[str, str] = dict(headers or {})
        self.body = body
        self.task_id = task_id

    def __repr__(self) -> str:
        return f"<{self.method} {self.url}>"


class Dropped:
    """A request or response a hook dropped, and why (the task's failure reason)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


Hook = Callable[[Any], Any]
"""One bound ``process_request`` or ``process_response``."""


class Middlewares:
    """A spider's hooks, resolved once per worker (`middlewares_of`)."""

    __slots__ = ("requests", "responses")

    def __init__(
        self, requests: Sequence[tuple[Hook, str]], responses: Sequence[tuple[Hook, str]]
    ) -> None:
        self.requests = tuple(requests)
        self.responses = tuple(responses)

    async def request(self, request: OutgoingRequest) -> OutgoingRequest | Dropped:
        """``request`` through every ``process_request`` in order, or `Dropped`."""
        for hook, name in self.requests:
            result = await _called(hook, request, name)
            if isinstance(result, Dropped):
                return result
            if result is not None:
                if not isinstance(result, OutgoingRequest):
                    raise TypeError(
                        f"middleware {name}.process_request returned {type(result).__name__}: "
                        "expected None or an OutgoingRequest"
                    )
                if result.url != request.url:
                    raise TypeError(
                        f"middleware {name}.process_request changed the URL of {request.url}: "
                        "a task's URL is what the task is; yield a Follow for another one"
                    )
                request = result
        return request

    async def response(self, response: Response) -> Response | Dropped:
        """``response`` through every ``process_response`` in order, or `Dropped`."""
        for hook, name in self.responses:
            result = await _called(hook, response, name)
            if isinstance(result, Dropped):
                return result
            if result is not None:
                if not isinstance(result, Response):
                    raise TypeError(
                        f"middleware {name}.process_response returned {type(result).__name__}: "
                        "expected None or a Response"
                    )
                response = result
        return response


async def _called(hook: Hook, given: Any, name: str) -> Any:
    try:
        result = hook(given)
        if inspect.isawaitable(result):
            result = await result
    except DropRequest as drop:
        return Dropped(_reason(drop, name))
    except Exception as exc:
        if (type(exc).__module__, type(exc).__name__) == _SCRAPY_IGNORE:
            return Dropped(_reason(exc, name))
        raise
    return result


def _reason(exc: BaseException, name: str) -> str:
    reason = " ".join(str(exc).split()) or f"by {name}"
    return DROP_PREFIX + reason[:DROP_REASON_MAX]


_resolved: WeakKeyDictionary[Spider, Middlewares] = WeakKeyDictionary()


def middlewares_of(spider: Spider) -> Middlewares:
    """The spider's ``middlewares`` as hooks; ConfigError naming the spider for an entry
    with neither method, or a class among them that cannot be made."""
    if (made := _resolved.get(spider)) is not None:
        return made
    made = _resolve(spider)
    _resolved[spider] = made
    return made


def _resolve(spider: Spider) -> Middlewares:
    declared = getattr(spider, "middlewares", ()) or ()
    if not isinstance(declared, Sequence) or isinstance(declared, str | bytes):
        declared = (declared,)  # `middlewares = Signed`: one hook, not a sequence of them
    requests: list[tuple[Hook, str]] = []
    responses: list[tuple[Hook, str]] = []
    for entry in declared:
        target = entry
        if inspect.isclass(entry):
            try:
                target = entry()
            except Exception as exc:
                raise ConfigError(
                    f"spider {spider.name}: middleware {entry.__name__}() failed ({exc})"
                ) from None
        name = type(target).__name__
        on_request = getattr(target, REQUEST_METHOD, None)
        on_response = getattr(target, RESPONSE_METHOD, None)
        if not callable(on_request) and not callable(on_response):
            raise ConfigError(
                f"spider {spider.name}: middleware {entry!r} has neither "
                f"{REQUEST_METHOD}(request) nor {RESPONSE_METHOD}(response)"
            )
        if callable(on_request):
            requests.append((on_request, name))
        if callable(on_response):
            responses.append((on_response, name))
    return Middlewares(requests, responses)
