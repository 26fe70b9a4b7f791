"""``--split-input-file``: one input file holding several independent test
cases, separated by marker lines (MLIR's ``splitAndProcessBuffer``)::

    relay.func @a(...) { ... }
    // -----
    relay.func @b(...) { ... }

A line that starts with ``// -----`` (anything may follow it on the line)
ends one chunk and starts the next.  Each chunk is parsed and processed on
its own, with the line it starts after passed as ``line_offset`` so that
diagnostics and ``expected-error`` annotations keep the whole file's line
numbers.  Outputs are joined with :data:`SEPARATOR`.
"""

from __future__ import annotations

import re

MARKER = "// -----"
SEPARATOR = MARKER + "\n"
_MARKER_LINE = re.compile(r"^// -----[^\n]*(\n|$)", re.M)


def split_input(text: str):
    """``[(chunk, line_offset)]``: the chunks of `text` in order, each with the
    number of lines of `text` before it (the marker lines are in no chunk)."""
    chunks = []
    start, line0 = 0, 0
    for m in _MARKER_LINE.finditer(text):
        chunks.append((text[start:m.start()], line0))
        line0 = text.count("\n", 0, m.end())
        start = m.end()
    chunks.append((text[start:], line0))
    return chunks


def join_outputs(outputs) -> str:
    """The outputs of the chunks, in order, as one text."""
    return SEPARATOR.join(outputs)
