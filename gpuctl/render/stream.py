"""The stream every report is printed through: no line ends in padding.

Rich pads table cells and padded blocks to their width; a copied command or a
diff of two reports should not carry those spaces. ``TrimmedWriter`` removes
spaces before each newline (before any trailing style codes too), whatever
printed them, so the guarantee holds for every view."""

from __future__ import annotations

import re
from typing import TextIO

_TRAILING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)(?=\n)")


class TrimmedWriter:
    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._pending = ""

    def write(self, text: str) -> int:
        data = self._pending + text
        cut = data.rfind("\n") + 1
        self._pending = data[cut:]
        if cut:
            self._out.write(_TRAILING.sub(r"\1", data[:cut]))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._out.write(self._pending.rstrip(" \t") if "\x1b" not in self._pending else self._pending)
            self._pending = ""
        self._out.flush()

    def isatty(self) -> bool:
        return self._out.isatty()

    def fileno(self) -> int:
        return self._out.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self._out, "encoding", "utf-8")
