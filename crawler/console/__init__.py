"""The web console: a job's progress on a page, updated live, and the operator's actions.

``crawlog console`` serves it (``crawler/cli/console.py``). It reads what the command line
reads (the projector's committed state plus the stream's tail, the workers' leases) and
acts through the same library calls as ``crawlog pause``, ``resume`` and ``retry``, so an
action from a page is an event with who and why, like one from a terminal. Starlette and
uvicorn are an optional extra (``pip install 'crawlog[console]'``) and load only here:
no worker and no other command imports this package. ``docs/console.md`` says how it works.

Every name loads on first use (``_LAZY``): the command checks that the extra is installed
before it loads the app.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crawler.console._app import bind_socket, serve, url_of
    from crawler.console._guard import is_loopback_address, new_token
    from crawler.console._state import ConsoleSettings

_LAZY: dict[str, str] = {
    "ConsoleSettings": "crawler.console._state",
    "bind_socket": "crawler.console._app",
    "is_loopback_address": "crawler.console._guard",
    "new_token": "crawler.console._guard",
    "serve": "crawler.console._app",
    "url_of": "crawler.console._app",
}
"""Each name loaded on first use → the module that defines it."""

__all__ = [
    "ConsoleSettings",
    "bind_socket",
    "is_loopback_address",
    "new_token",
    "serve",
    "url_of",
]

if not TYPE_CHECKING:
    # Hidden from mypy, so that a name missing from the imports above is an error there
    # rather than an ``Any``.

    def __getattr__(name: str) -> object:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
