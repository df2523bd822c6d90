"""A progress bar on stderr: redrawn in place on a terminal; on a log (``--progress`` without
a terminal) one line per tenth of the way, so CI logs stay short."""

from __future__ import annotations

import sys
from typing import TextIO

WIDTH = 30


class Bar:
    def __init__(self, enabled: bool, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = self.stream.isatty()
        self._last: tuple[str, int] | None = None
        self._open = False

    def __call__(self, label: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        tenth = (done * 10 // total) if total else 10
        if not self.tty and self._last == (label, tenth) and done < total:
            return
        self._last = (label, tenth)
        filled = WIDTH * done // total if total else WIDTH
        percent = 100 * done / total if total else 100.0
        line = f"{label} [{'#' * filled}{'.' * (WIDTH - filled)}] {done}/{total} {percent:.0f}%"
        if self.tty:
            self.stream.write("\r\x1b[2K" + line)
            self._open = True
            if done >= total:
                self.stream.write("\n")
                self._open = False
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False


def enabled(flag: bool | None, stream: TextIO | None = None) -> bool:
    """``--progress``/``--no-progress`` when given, else on when stderr is a terminal."""
    return flag if flag is not None else (stream or sys.stderr).isatty()
