"""Source locations attached to operations and diagnostics.

Text form (MLIR's): ``loc("file.relay":3:5)``, ``loc(unknown)``,
``loc("name"("file":1:2))`` for a named location, and
``loc(fused["a":1:1, "b":2:2])`` for ops merged from several places.
"""

from __future__ import annotations


class Location:
    """Base of all locations; ``UNKNOWN`` is the shared unknown location."""

    __slots__ = ()

    def file_line_col(self):
        """The first concrete (file, line, col) this location points at, or None."""
        return None

    def __repr__(self):
        return f"loc({self.text()})"

    def text(self) -> str:
        return "unknown"


class UnknownLoc(Location):
    __slots__ = ()


UNKNOWN = UnknownLoc()


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


class FileLoc(Location):
    """A point in a source file: 1-based line and column."""

    __slots__ = ("file", "line", "col")

    def __init__(self, file: str, line: int, col: int):
        self.file = file
        self.line = line
        self.col = col

    def file_line_col(self):
        return (self.file, self.line, self.col)

    def text(self):
        return f"{_quote(self.file)}:{self.line}:{self.col}"

    def __eq__(self, other):
        return (isinstance(other, FileLoc) and self.line == other.line
                and self.col == other.col and self.file == other.file)

    def __hash__(self):
        return hash((self.file, self.line, self.col))


class NameLoc(Location):
    """A named location, e.g. the node name an importer took from a model."""

    __slots__ = ("name", "child")

    def __init__(self, name: str, child: Location = UNKNOWN):
        self.name = name
        self.child = child

    def file_line_col(self):
        return self.child.file_line_col()

    def text(self):
        if isinstance(self.child, UnknownLoc):
            return _quote(self.name)
        return f"{_quote(self.name)}({self.child.text()})"

    def __eq__(self, other):
        return isinstance(other, NameLoc) and (self.name, self.child) == (other.name, other.child)

    def __hash__(self):
        return hash((self.name, self.child))


class FusedLoc(Location):
    """Several locations merged, e.g. for an op that a pass built from many."""

    __slots__ = ("locs",)

    def __init__(self, locs):
        self.locs = tuple(locs)

    def file_line_col(self):
        for loc in self.locs:
            flc = loc.file_line_col()
            if flc:
                return flc
        return None

    def text(self):
        return "fused[" + ", ".join(l.text() for l in self.locs) + "]"

    def __eq__(self, other):
        return isinstance(other, FusedLoc) and self.locs == other.locs

    def __hash__(self):
        return hash(self.locs)


def fuse(locs) -> Location:
    """Merge locations, dropping unknowns and duplicates."""
    out = []
    for loc in locs:
        parts = loc.locs if isinstance(loc, FusedLoc) else (loc,)
        for p in parts:
            if not isinstance(p, UnknownLoc) and p not in out:
                out.append(p)
    if not out:
        return UNKNOWN
    if len(out) == 1:
        return out[0]
    return FusedLoc(out)
