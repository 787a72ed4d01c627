"""The web console: a job's progress on a page, updated live, and the operator's actions.

``crawlog console`` serves it (``crawler/cli/console.py``). It reads what the command line
reads (the projector's committed state plus the stream's tail, the workers' leases) and
acts through the same library as ``crawlog pause``, ``resume``, ``retry`` and ``resolve``
(``crawler.ops``; it imports nothing from the command line), so an action from a page is
an event with who and why, like one from a terminal. Starlette and
uvicorn are an optional extra (``pip install 'crawlog[console]'``) and load only here:
no worker and no other command imports this package. ``docs/console.md`` says how it works.

Every name loads on first use (:func:`eventlog.install_lazy_importer`): the command checks
that the extra is installed before it loads the app.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog import install_lazy_importer as _install_lazy_importer

if TYPE_CHECKING:
    from crawler.console._app import bind_socket, serve, url_of
    from crawler.console._guard import is_loopback_address, new_token
    from crawler.console._state import ConsoleSettings


__all__ = [
    "ConsoleSettings",
    "bind_socket",
    "is_loopback_address",
    "new_token",
    "serve",
    "url_of",
]

_install_lazy_importer(globals())
