"""The resource section at the end of a file: large constants as hex blobs.

    {-#
      dialect_resources: {
        builtin: {
          w0: "0x04000000ABCD..."
        }
      },
      external_resources: {
        tvmd_reproducer: {
          pipeline: "fuse-ops,dce"
        }
      }
    #-}

It is cut off before the grammar sees the file and read here with plain
string scanning, so a 100 MB weight is decoded by ``bytes.fromhex`` in one
call instead of being lexed token by token.
"""

from __future__ import annotations

import re

from ..ir.diagnostics import DiagnosticError
from ..ir.location import FileLoc

_ENTRY = re.compile(r'\s*([A-Za-z_][\w$.\-]*|"[^"]*")\s*:\s*')


def split_resources(text: str):
    """Return (ir_text, resource_text, line where the section starts)."""
    idx = text.rfind("{-#")
    if idx < 0 or (idx > 0 and text[idx - 1] != "\n"):
        return text, None, 0
    line = text.count("\n", 0, idx) + 1
    return text[:idx], text[idx:], line


class _Scanner:
    def __init__(self, text, filename, line0):
        self.s = text
        self.pos = 0
        self.filename = filename
        self.line0 = line0

    def error(self, msg):
        line = self.line0 + self.s.count("\n", 0, self.pos)
        col = self.pos - (self.s.rfind("\n", 0, self.pos) + 1) + 1
        return DiagnosticError(FileLoc(self.filename, line, col), msg)

    def ws(self):
        s, n = self.s, len(self.s)
        while self.pos < n and s[self.pos] in " \t\r\n":
            self.pos += 1

    def expect(self, lit):
        self.ws()
        if not self.s.startswith(lit, self.pos):
            raise self.error(f"expected '{lit}' in the resource section")
        self.pos += len(lit)

    def peek(self, lit):
        self.ws()
        return self.s.startswith(lit, self.pos)

    def key(self):
        self.ws()
        m = _ENTRY.match(self.s, self.pos)
        if not m:
            raise self.error("expected 'name:' in the resource section")
        self.pos = m.end()
        k = m.group(1)
        return k[1:-1] if k.startswith('"') else k

    def string(self):
        self.ws()
        if not self.s.startswith('"', self.pos):
            raise self.error("expected a string in the resource section")
        end = self.s.find('"', self.pos + 1)
        if end < 0:
            raise self.error("unterminated string in the resource section")
        v = self.s[self.pos + 1:end]
        self.pos = end + 1
        return v

    def entries(self, value):
        """`{ key: value, ... }` calling value() for each entry."""
        out = {}
        self.expect("{")
        while not self.peek("}"):
            k = self.key()
            out[k] = value()
            if self.peek(","):
                self.pos += 1
        self.expect("}")
        return out


def parse_resources(text: str, filename: str, line0: int):
    """Return (blobs: key -> bytes, external: dict of dict of str)."""
    sc = _Scanner(text, filename, line0)
    sc.expect("{-#")
    blobs, external = {}, {}
    while not sc.peek("#-}"):
        section = sc.key()
        if section == "dialect_resources":
            def dialect():
                def blob():
                    start = sc.pos
                    v = sc.string()
                    if not v.startswith("0x") or len(v) < 10 or len(v) % 2:
                        sc.pos = start
                        raise sc.error("a resource blob is a string \"0x\" + 4-byte alignment + hex data")
                    try:
                        return bytes.fromhex(v[10:])
                    except ValueError:
                        sc.pos = start
                        raise sc.error("a resource blob holds a non-hex character") from None
                return sc.entries(blob)
            for d in sc.entries(dialect).values():
                blobs.update(d)
        elif section == "external_resources":
            external.update(sc.entries(lambda: sc.entries(sc.string)))
        else:
            raise sc.error(f"unknown resource section '{section}'")
        if sc.peek(","):
            sc.pos += 1
    sc.expect("#-}")
    sc.ws()
    if sc.pos != len(sc.s):
        raise sc.error("unexpected text after the resource section")
    return blobs, external
