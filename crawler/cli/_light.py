"""What keeps a worker light, whether forked by a crawl or started as ``crawlog worker``."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import cast


def without_httpx_cli() -> None:
    """Keep httpx from importing its own command line when it is imported.

    httpx's ``__init__`` imports ``httpx._main`` when rich and pygments are installed (they
    are: the progress table uses rich), which loads both into every worker for a command
    line crawlog never runs. A ``None`` in ``sys.modules`` makes that import fail, and
    httpx defines a stub ``main`` instead.
    """
    sys.modules.setdefault("httpx._main", cast("ModuleType", None))
