"""Diagnostics: ``file:line:col: error: message``, the source line and a caret.

User errors anywhere in the toolkit (syntax, types, verifier, pass options)
are raised as :class:`DiagnosticError`; the drivers render them with
:func:`render` and exit 1, never with a Python traceback.  Warnings and
remarks go through :func:`emit`, which hands them to the innermost handler
(the driver prints them; ``--verify-diagnostics`` collects them).
"""

from __future__ import annotations

from .location import UNKNOWN, Location

SEVERITIES = ("error", "warning", "note", "remark")


class Diagnostic:
    __slots__ = ("severity", "loc", "message", "notes")

    def __init__(self, severity: str, loc: Location, message: str, notes=()):
        self.severity = severity
        self.loc = loc if loc is not None else UNKNOWN
        self.message = message
        self.notes = list(notes)

    def note(self, loc: Location, message: str) -> "Diagnostic":
        self.notes.append(Diagnostic("note", loc, message))
        return self

    def __repr__(self):
        return f"Diagnostic({self.severity}, {self.loc!r}, {self.message!r})"


class DiagnosticError(Exception):
    """A user error, carrying one or more diagnostics."""

    def __init__(self, loc_or_diags, message: str | None = None, notes=()):
        if message is None:
            diags = list(loc_or_diags)
        else:
            diags = [Diagnostic("error", loc_or_diags, message,
                                [n if isinstance(n, Diagnostic) else Diagnostic("note", n[0], n[1])
                                 for n in notes])]
        self.diagnostics = diags
        super().__init__(diags[0].message if diags else "error")

    @property
    def loc(self):
        return self.diagnostics[0].loc


def error(loc: Location, message: str, notes=()) -> DiagnosticError:
    """Build a DiagnosticError for ``raise error(op.loc, "...")``."""
    return DiagnosticError(loc, message, notes)


class SourceManager:
    """Holds the text of every file read, to quote source lines in diagnostics."""

    def __init__(self):
        self._files: dict[str, list[str]] = {}
        self._offsets: dict[str, int] = {}

    def add(self, name: str, text: str, line_offset: int = 0):
        """Register `text` as the content of `name`; a chunk of a split file
        passes the line it starts at so its lines still resolve."""
        self._files[name] = text.split("\n")
        self._offsets[name] = line_offset

    def line(self, name: str, lineno: int):
        lines = self._files.get(name)
        if lines is None:
            return None
        idx = lineno - 1 - self._offsets.get(name, 0)
        if 0 <= idx < len(lines):
            return lines[idx]
        return None


def _caret(src_line: str, col: int) -> str:
    # Keep tabs so the caret lines up under the source as a terminal shows it.
    prefix = "".join("\t" if ch == "\t" else " " for ch in src_line[: max(col - 1, 0)])
    return prefix + "^"


def render_one(d: Diagnostic, sources: SourceManager | None) -> str:
    flc = d.loc.file_line_col() if d.loc is not None else None
    if flc:
        file, line, col = flc
        head = f"{file}:{line}:{col}: {d.severity}: {d.message}"
        src = sources.line(file, line) if sources else None
        if src is not None:
            src = src.rstrip("\r")
            if len(src) > 400:  # a minified or binary line: show the part around the column
                start = max(col - 200, 0)
                src, col = src[start:start + 400], col - start
            return f"{head}\n{src}\n{_caret(src, col)}"
        return head
    return f"{d.severity}: {d.message}"


def render(d: Diagnostic, sources: SourceManager | None = None) -> str:
    parts = [render_one(d, sources)]
    for n in d.notes:
        parts.append(render(n, sources))
    return "\n".join(parts)


# -- non-fatal diagnostics ----------------------------------------------------

_handlers: list = []


class collect:
    """Context manager that collects emitted diagnostics into a list."""

    def __init__(self):
        self.diagnostics: list[Diagnostic] = []

    def __enter__(self):
        _handlers.append(self.diagnostics.append)
        return self.diagnostics

    def __exit__(self, *exc):
        _handlers.pop()
        return False


def emit(severity: str, loc: Location, message: str):
    """Report a warning or remark without stopping; printed by the driver."""
    d = Diagnostic(severity, loc, message)
    if _handlers:
        _handlers[-1](d)
    else:
        import sys
        sys.stderr.write(render(d) + "\n")
    return d


def warning(loc: Location, message: str):
    return emit("warning", loc, message)


def remark(loc: Location, message: str):
    return emit("remark", loc, message)
