"""crawlog's own bytecode, written once where Python was told to write none.

With ``PYTHONDONTWRITEBYTECODE`` set (some shells, CI images, this project's development
environment), an installed wheel has its bytecode (pip compiles at install), but a source
checkout or an editable install has none, and every crawlog process compiled each module it
imported, every time: a crawl's parent, its workers and its projector. So a crawl that
finds its packages' bytecode missing or older than their source starts one
``python -m compileall`` of them in the background as it exits (a process of its own
session, its output discarded); the next crawl imports compiled modules. Where the
packages' directories are not writable (a system install) nothing is started, and where
Python writes bytecode itself nothing is needed. ``sys.pycache_prefix``
(``PYTHONPYCACHEPREFIX``), if set, is honoured: compileall writes there, as imports read.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

PACKAGES = ("crawler", "eventlog", "projector")
"""crawlog's packages: what a crawl's processes import of crawlog's own."""
NO_BYTECODE_ENV = "PYTHONDONTWRITEBYTECODE"


def package_directories() -> list[Path]:
    """Where crawlog's packages are (as imported by this process)."""
    found = []
    for name in PACKAGES:
        module = sys.modules.get(name)
        paths = getattr(module, "__path__", None) if module is not None else None
        if paths:
            found.append(Path(next(iter(paths))))
    return found


def stale_sources(directories: Iterable[Path]) -> list[Path]:
    """The modules under ``directories`` whose bytecode is missing or older than them.

    One listing of each cache directory, not a look-up per module: this runs at the end of
    every crawl, after its summary."""
    stale = []
    for directory in directories:
        for root, subdirectories, files in os.walk(directory):
            subdirectories[:] = [d for d in subdirectories if d != "__pycache__"]
            sources = [name for name in files if name.endswith(".py")]
            if not sources:
                continue
            try:
                # Where imports look for this directory's bytecode, and how they name it.
                probe = Path(importlib.util.cache_from_source(os.path.join(root, "_.py")))
            except (NotImplementedError, ValueError):
                stale += [Path(root, name) for name in sources]
                continue
            written, suffix = _mtimes(probe.parent), probe.name.removeprefix("_")
            for name in sources:
                source = os.path.join(root, name)
                try:
                    if written.get(name[:-3] + suffix, -1.0) < os.stat(source).st_mtime:
                        stale.append(Path(source))
                except OSError:
                    stale.append(Path(source))
    return stale


def _mtimes(directory: Path) -> dict[str, float]:
    """Each file in ``directory`` → its mtime (none for a file gone meanwhile)."""
    found: dict[str, float] = {}
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):  # replaced by a compile meanwhile
                found[entry.name] = entry.stat().st_mtime
    return found


def writable(directories: Iterable[Path]) -> bool:
    """Whether bytecode can be written for every one of ``directories`` (the
    ``__pycache__`` beside them, or ``sys.pycache_prefix``)."""
    if sys.pycache_prefix:
        return os.access(sys.pycache_prefix, os.W_OK) or not os.path.exists(sys.pycache_prefix)
    return all(os.access(directory, os.W_OK) for directory in directories)


def compile_in_background() -> subprocess.Popen[bytes] | None:
    """Start compiling crawlog's packages, if Python writes no bytecode and some is missing
    or stale; the compiling process (not waited for: it outlives its starter), or None."""
    if not sys.dont_write_bytecode:
        return None  # every import wrote its module's bytecode already
    directories = package_directories()
    if not directories or not stale_sources(directories) or not writable(directories):
        return None
    env = {k: v for k, v in os.environ.items() if k != NO_BYTECODE_ENV}
    command = [sys.executable, "-m", "compileall", "-q", *map(str, directories)]
    with contextlib.suppress(OSError):
        return subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    return None
