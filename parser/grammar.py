"""Assembly of the full grammar and the Lark parser, built once per process.

The grammar is ``core.lark`` followed by each dialect's ``.lark`` and the
rules generated from the ops' declarative assembly formats
(``ASSEMBLY_FORMAT``, ir/assembly_format.py); the rule ``custom_op`` is
written here as the alternation of every dialect's hand-written op rules
(each dialect's ``syntax.OP_RULES``) and the generated ones.  Ops whose
formats have one shape share a generated rule, whose op-name terminal is the
alternation of their names.  The callback class is CoreBuilder mixed with
each dialect's ``syntax.Syntax``, plus one callback per generated rule.
Lark caches its LALR tables on disk keyed by the grammar's hash, so only the
first run pays to build them.
"""

from __future__ import annotations

import importlib
import os
import re

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


class GrammarBuildError(Exception):
    """The dialects' grammars and formats do not make one grammar."""


def format_ops(mods):
    """The registered op classes of the dialects `mods` that have an
    assembly format, sorted by name (so the grammar, and its cache key, is
    the same in every process)."""
    from ..ir.core import OP_CLASSES
    pkgs = tuple(m.__name__.rsplit(".", 1)[0] + "." for m in mods)
    ops = [c for c in OP_CLASSES.values()
           if getattr(c, "_assembly_format", None) is not None and c.ASSEMBLY_FORMAT is not None
           and c.__module__.startswith(pkgs)]
    return sorted(ops, key=lambda c: c.name)


def format_rules(classes):
    """Group `classes` by format shape: [(rule name, format, [classes])]."""
    shapes = {}
    for c in classes:
        shapes.setdefault(c._assembly_format.key, []).append(c)
    out = []
    counts = {}
    for group in shapes.values():
        dialect = group[0].name.split(".", 1)[0]
        k = counts.get(dialect, 0)
        counts[dialect] = k + 1
        out.append((f"fmt_{dialect}_{k}", group[0]._assembly_format, group))
    return out


def format_grammar(rules) -> tuple[str, list]:
    """The generated grammar text for `rules`, and the rule names for
    ``custom_op``."""
    lines = ["// ---- generated from the ops' ASSEMBLY_FORMAT (parser/grammar.py) ----"]
    names = []
    for rule, fmt, classes in rules:
        term = rule.upper()
        body = fmt.grammar
        for k, (gbody, _) in enumerate(fmt.groups):
            lines.append(f"{rule}_g{k}: {gbody}")
            body = body.replace("{group%d}" % k, f"{rule}_g{k}")
        lines.append(f"{rule}: {term} {body}".rstrip())
        alts = "|".join(re.escape(c.name) for c in classes)
        # priority 4: an op name wins over relay's bare operator names
        lines.append(f"{term}.4: /(?:{alts})(?![\\w.])/")
        names.append(rule)
    lines.append("_fmt_number: INT | FLOAT | SPECIAL_FLOAT")
    lines.append("_fmt_scalar: INT | FLOAT | SPECIAL_FLOAT | FMT_BOOL")
    lines.append('FMT_BOOL: "true" | "false"')
    return "\n".join(lines) + "\n", names


def format_callbacks(rules) -> dict:
    from .builder import format_callback, group_callback
    cbs = {}
    for rule, fmt, classes in rules:
        cbs[rule] = format_callback(fmt, classes)
        for k in range(len(fmt.groups)):
            cbs[f"{rule}_g{k}"] = group_callback
    return cbs


def grammar_text(mods, rules=None) -> str:
    here = os.path.dirname(__file__)
    parts = [open(os.path.join(here, "core.lark"), encoding="utf-8").read()]
    op_rules = []
    if rules is None:
        rules = format_rules(format_ops(mods))
    formatted = {c.name for _, _, classes in rules for c in classes}
    for m in mods:
        path = os.path.join(os.path.dirname(m.__file__), m.GRAMMAR)
        text = open(path, encoding="utf-8").read()
        for lit in re.findall(r'"([\w.]+)"', text):
            if lit in formatted:
                raise GrammarBuildError(f"{path}: '{lit}' has an ASSEMBLY_FORMAT and a hand-written rule; "
                                        "keep one")
        parts.append(f"// ---- {m.__name__} ----\n" + text)
        op_rules.extend(m.OP_RULES)
    if rules:
        text, names = format_grammar(rules)
        parts.append(text)
        op_rules.extend(names)
    parts.append("?custom_op: " + " | ".join(op_rules) + "\n" if op_rules else "custom_op: \"\\x00never\"\n")
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

    def int_literal(self, tok):
        """Bound an integer literal's length at the lexer, before anything
        converts it: no type holds more than MAX_INT_LITERAL_DIGITS digits,
        and Python refuses int() of over 4300."""
        from ..ir.types import MAX_INT_LITERAL_DIGITS
        s = str(tok)
        digits = len(s) - (s[0] == "-") - (2 if "x" in s else 0)
        if digits > MAX_INT_LITERAL_DIGITS:
            from ..ir.diagnostics import DiagnosticError
            from ..ir.location import FileLoc
            raise DiagnosticError(FileLoc(self.filename, tok.line + self.line_offset, tok.column),
                                  f"integer literal of {digits} digits is too long (at most {MAX_INT_LITERAL_DIGITS})")
        return tok


class Parser:
    def __init__(self):
        from lark import Lark
        mods = _syntax_modules()
        from .builder import CoreBuilder
        bases = tuple(m.Syntax for m in mods if hasattr(m, "Syntax")) + (CoreBuilder,)
        rules = format_rules(format_ops(mods))
        Builder = type("Builder", bases, format_callbacks(rules))
        self.builder = Builder()
        self.depth = _Depth()
        callbacks = {n: self.depth.open for n in _OPEN}
        callbacks.update({n: self.depth.close for n in _CLOSE})
        callbacks["INT"] = self.depth.int_literal
        self.text = grammar_text(mods, rules)
        from .lexer import FastContextualLexer
        from lark.exceptions import GrammarError
        try:
            self.lark = Lark(self.text, parser="lalr", lexer="contextual", transformer=self.builder,
                             maybe_placeholders=False, cache=True, lexer_callbacks=callbacks,
                             _plugins={"ContextualLexer": FastContextualLexer})
        except GrammarError as e:
            gen = ", ".join(f"{r} ({', '.join(c.name for c in cs)})" for r, _, cs in rules)
            raise GrammarBuildError(f"{e}\nrules generated from assembly formats: {gen}") from None
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
