"""The worker and projector processes of a crawl die with it.

``crawlog crawl`` stops its children itself when it is stopped (workers first, then the
projector). Killed with SIGKILL, it cannot: without this, its workers and projector lived
on as orphans (the projector, in a session of its own, even past a ``kill -9`` of the
whole process group), and the README's tour needed ``pkill -f`` to find them. So a crawl
passes its pid in :data:`PARENT_ENV`, and each child asks the kernel (Linux
``PR_SET_PDEATHSIG``) for a SIGKILL when it loses that parent: ``kill -9 CRAWL_PID``
kills the whole crawl, as a crash of the machine would. What a SIGKILL leaves behind is
what crawlog recovers from (leases taken back on the next run, the projector's last
commit). Where the kernel offers no such thing the children outlive a killed crawl.

Light on purpose: imported by every worker.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

PARENT_ENV = "CRAWLOG_CRAWL_PID"
"""Set by ``crawlog crawl`` for the processes it starts: its own pid."""
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """If started by a crawl (:data:`PARENT_ENV`), get SIGKILLed when that crawl dies."""
    parent = os.environ.get(PARENT_ENV, "")
    if not parent.isdigit() or not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        # The process's own symbols include libc's (find_library would run ldconfig).
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != int(parent):
        # The crawl died before the request was made: nobody will send the signal.
        os.kill(os.getpid(), signal.SIGKILL)
