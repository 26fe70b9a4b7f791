"""Assembly of the full grammar and the Lark parser, built once per process.

The grammar is ``core.lark`` followed by each dialect's ``.lark``; the rule
``custom_op`` is written here as the alternation of every dialect's op rules
(each dialect's ``syntax.OP_RULES``).  The callback class is CoreBuilder
mixed with each dialect's ``syntax.Syntax``.  Lark caches its LALR tables on
disk keyed by the grammar's hash, so only the first run pays to build them.
"""

from __future__ import annotations

import importlib
import os

from ..ir.registry import DIALECTS

_PARSER = None
MAX_NESTING = 256

_OPEN = {"LBRACE", "LSQB", "LPAR", "LESSTHAN"}
_CLOSE = {"RBRACE", "RSQB", "RPAR", "MORETHAN"}


def _syntax_modules():
    mods = []
    for name, pkg in DIALECTS.items():
        try:
            mods.append(importlib.import_module(pkg + ".syntax"))
        except ModuleNotFoundError as e:
            if e.name != pkg + ".syntax":
                raise
    return mods


def grammar_text(mods) -> str:
    here = os.path.dirname(__file__)
    parts = [open(os.path.join(here, "core.lark"), encoding="utf-8").read()]
    rules = []
    for m in mods:
        path = os.path.join(os.path.dirname(m.__file__), m.GRAMMAR)
        parts.append(f"// ---- {m.__name__} ----\n" + open(path, encoding="utf-8").read())
        rules.extend(m.OP_RULES)
    parts.append("?custom_op: " + " | ".join(rules) + "\n" if rules else "custom_op: \"\\x00never\"\n")
    return "\n".join(parts)


class _Depth:
    """Lexer callbacks that refuse absurd nesting before anything recurses."""

    def __init__(self):
        self.depth = 0
        self.filename = "<input>"
        self.line_offset = 0

    def open(self, tok):
        self.depth += 1
        if self.depth > MAX_NESTING:
            from ..ir.diagnostics import DiagnosticError
            from ..ir.location import FileLoc
            raise DiagnosticError(FileLoc(self.filename, tok.line + self.line_offset, tok.column),
                                  f"nesting deeper than {MAX_NESTING} levels")
        return tok

    def close(self, tok):
        self.depth -= 1
        return tok


class Parser:
    def __init__(self):
        from lark import Lark
        mods = _syntax_modules()
        from .builder import CoreBuilder
        bases = tuple(m.Syntax for m in mods if hasattr(m, "Syntax")) + (CoreBuilder,)
        Builder = type("Builder", bases, {})
        self.builder = Builder()
        self.depth = _Depth()
        callbacks = {n: self.depth.open for n in _OPEN}
        callbacks.update({n: self.depth.close for n in _CLOSE})
        self.text = grammar_text(mods)
        from .lexer import FastContextualLexer
        self.lark = Lark(self.text, parser="lalr", lexer="contextual", transformer=self.builder,
                         maybe_placeholders=False, cache=True, lexer_callbacks=callbacks,
                         _plugins={"ContextualLexer": FastContextualLexer})
        self.terminals = {t.name: t for t in self.lark.terminals}

    def parse(self, text: str, filename: str, line_offset=0, resources=None, allow_unregistered=False):
        self.builder.reset(filename, line_offset, resources, allow_unregistered)
        self.depth.depth = 0
        self.depth.filename = filename
        self.depth.line_offset = line_offset
        return self.lark.parse(text)


def get_parser() -> Parser:
    global _PARSER
    if _PARSER is None:
        _PARSER = Parser()
    return _PARSER
