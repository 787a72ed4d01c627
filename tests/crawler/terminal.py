"""What a terminal shows after some output: enough of a VT100 for rich's live display.

Printable text (wrapping at the width), CR, LF, backspace, and the CSI sequences rich's
``Live`` moves with: cursor up/down/forward/back/column, erase in line and in display;
other CSI sequences (colours, cursor visibility) change nothing on the screen.
"""

from __future__ import annotations

import re

_CSI = re.compile(r"\x1b\[([0-9;?]*)([@-~])")
_OTHER_ESCAPE = re.compile(r"\x1b[\]P].*?(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]")


def screen_lines(output: bytes, width: int) -> list[str]:
    """The lines on the screen (scrollback included), trailing blanks dropped."""
    text = _OTHER_ESCAPE.sub("", output.decode(errors="replace"))
    lines: list[list[str]] = [[]]
    row = col = 0
    pos = 0

    def line() -> list[str]:
        while len(lines) <= row:
            lines.append([])
        return lines[row]

    while pos < len(text):
        if (match := _CSI.match(text, pos)) is not None:
            pos = match.end()
            params, final = match.group(1), match.group(2)
            n = int(params) if params.isdigit() else (0 if final in "JK" else 1)
            if final == "A":
                row = max(row - n, 0)
            elif final == "B":
                row += n
            elif final == "C":
                col = min(col + n, width - 1)
            elif final == "D":
                col = max(col - n, 0)
            elif final == "G":
                col = max(n - 1, 0)
            elif final == "K":
                cells = line()
                if n == 2:
                    cells.clear()
                elif n == 0:
                    del cells[col:]
                else:
                    cells[: col + 1] = [" "] * min(col + 1, len(cells))
            elif final == "J" and n in (0, 2):
                del line()[col:]
                del lines[row + 1 :]
            continue
        char = text[pos]
        pos += 1
        if char == "\r":
            col = 0
        elif char == "\n":
            row += 1
            line()
        elif char == "\b":
            col = max(col - 1, 0)
        elif char >= " ":
            if col >= width:
                row, col = row + 1, 0
            cells = line()
            cells.extend(" " * (col + 1 - len(cells)))
            cells[col] = char
            col += 1
    rendered = ["".join(cells).rstrip() for cells in lines]
    while rendered and not rendered[-1]:
        rendered.pop()
    return rendered
