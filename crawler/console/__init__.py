"""The web console: a job's progress on a page, updated live, and the operator's actions.

``crawlog console`` serves it (``crawler/cli/console.py``). It reads what the command line
reads (the projector's committed state plus the stream's tail, the workers' leases) and
acts through the same library calls as ``crawlog pause``, ``resume`` and ``retry``, so an
action from a page is an event with who and why, like one from a terminal. Starlette and
uvicorn are an optional extra (``pip install 'crawlog[console]'``) and load only here:
no worker and no other command imports this package. ``docs/console.md`` says how it works.
"""

from __future__ import annotations

__all__: list[str] = []
