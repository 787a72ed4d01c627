"""The crawl's terminal, before any table is drawn: its lines, and its children's stderr.

Light on purpose (no rich): a crawl sets this up before it starts its workers, and what
it imports by then delays their first request (``tools/bench_restart.py``). The live table
(``_progress_view``) takes the same lock, so lines and frames never interleave.
"""

from __future__ import annotations

import os
import sys
import threading

RELAY_DRAIN_S = 2.0
"""How long the end of a crawl waits for its children's last lines of output."""
TERMINAL = threading.RLock()
"""Held while the live table is started, redrawn or stopped, and while a line is
written: a line written during a redraw (or as the table stops) lands where rich does not
expect it, and the next frame is drawn under the remains of the last."""
_TERMINAL = TERMINAL


class ChildOutput:
    """One pipe for the stderr of a crawl's children, copied line by line to this process's
    ``sys.stderr`` by a thread.

    A live table is redrawn in place: rich moves the cursor up over the last frame and draws
    the next. A child writing to the terminal itself moves the cursor where rich does not
    know, and the next frame is drawn lower, under what is left of the last one (its header
    shows twice: after a Ctrl-C, every child of the terminal's process group has something
    to say). Copied through ``sys.stderr`` instead, which rich redirects while the table is
    up, the lines are printed above the table; without a table they go to stderr as before.
    The pipe is read all the time, so a child's logging never blocks on it.
    """

    def __init__(self, *, relay: bool = True) -> None:
        """``relay=False``: copy nothing until :meth:`relay` (a crawl forks its children
        first, and a fork must find no other thread)."""
        read, self.fd = os.pipe()
        """The write end: pass it as the children's stderr, then call ``started``."""
        self._source = os.fdopen(read, "rb", buffering=0)
        self._thread = threading.Thread(target=self._copy, name="child-output", daemon=True)
        if relay:
            self.relay()

    def relay(self) -> None:
        """Start copying the children's lines (once)."""
        if not self._thread.is_alive() and self._thread.ident is None:
            self._thread.start()

    def started(self) -> None:
        """Every child has its copy of the write end: close ours (the pipe ends with them)."""
        if self.fd != -1:
            os.close(self.fd)
            self.fd = -1

    def close(self, timeout_s: float = RELAY_DRAIN_S) -> None:
        """Wait for the children's last lines (they exited), at most ``timeout_s``."""
        self.started()
        if self._thread.ident is not None:
            self._thread.join(timeout_s)

    def _copy(self) -> None:
        pending = b""
        with self._source:
            while chunk := self._source.read(65536):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    _write_err(line.decode(errors="replace") + "\n")
        if pending:
            _write_err(pending.decode(errors="replace") + "\n")


def echo_line(text: str) -> None:
    """Print one line on stdout, above the live table while one is drawn.

    Not ``click.echo``: rich swaps ``sys.stdout`` for a proxy while the table is up, and
    click writes to the binary buffer under it (the proxy hands its attributes through),
    bypassing rich: the next frame is then drawn one line low and its header shows twice.
    """
    with _TERMINAL:
        stream = sys.stdout
        try:
            stream.write(text + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass  # the terminal went away: nowhere left to say it


def _write_err(text: str) -> None:
    with _TERMINAL:
        # Looked up on every line: a live table swaps in its own stream while it is drawn.
        stream = sys.stderr
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError):
            pass  # the terminal went away: nowhere left to say it
