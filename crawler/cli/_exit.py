"""Every exit status the ``crawlog`` command line gives, in one place.

Scripts branch on these, so they are part of the interface: 0 success, 1 a "no" answer
(``server status`` with nothing running, ``jobs`` with no jobs, a crawl that got nothing
done), 2 an error (one line on stderr; also a crawl stopped by a server that cannot write or
that lost the job),
141 a reader of stdout that went away. 3, 4 and 5 are only between a crawl and the processes it
starts: they tell the crawl, which says it once for all of them, why a child stopped.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import NoReturn

EXIT_OK = 0
EXIT_NO = 1
"""A "no" answer: nothing is running, no job matched, a crawl ended in a state asked to fail."""
EXIT_ERROR = 2
"""A crawlog error: bad input or a state it cannot go on from, said in one line."""
EXIT_DISK_FULL = 3
"""How a process of a crawl exits, silently, when the server's disk is full."""
EXIT_CANNOT_PERSIST = 4
"""... when the server cannot persist for another reason (MISCONF)."""
EXIT_STORE_LOST = 5
"""... when the store lost the job (``StoreLost``): the crawl says it once, and exits 2."""
EXIT_BROKEN_PIPE = 128 + 13
"""128 + SIGPIPE: what the shell reports for ``cat`` or ``grep`` whose reader went away."""


def exit_now(status: int) -> NoReturn:
    """Exit with ``status`` once a crawl's (or recrawl's) summary is out, without the
    interpreter's finalization.

    That tears down every module the crawl imported (Arrow's among them) between the
    summary and the shell's prompt, and leaves nothing to do: the children were reaped, the
    server is a daemon, and what is buffered is flushed here (a closed pipe raises as it
    did at the group's own flush, and is handled there).
    """
    from crawler.cli._bytecode import compile_in_background

    compile_in_background()  # once, where Python writes none: see ``_bytecode``
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(status)
