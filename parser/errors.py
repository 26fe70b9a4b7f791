"""Lark's exceptions turned into diagnostics that read like MLIR's."""

from __future__ import annotations

from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.lexer import PatternStr

from ..ir.diagnostics import DiagnosticError
from ..ir.location import FileLoc

# what a named terminal means to a user
_DESCRIBE = {
    "VALUE": "an SSA value (%name)",
    "SYMBOL": "a symbol (@name)",
    "BLOCK_ID": "a block label (^bb0)",
    "STRING": "a string",
    "INT": "an integer",
    "FLOAT": "a number",
    "SPECIAL_FLOAT": "a number",
    "BARE_ID": "an identifier",
    "SCALAR_TYPE": "a type",
    "SHAPED_TYPE": "a type",
    "DIALECT_TYPE": "a type",
    "DIALECT_ATTR": "an attribute",
    "DENSE": "'dense'",
    "DENSE_RESOURCE": "'dense_resource'",
    "RELAY_OPNAME": "an operation",
    "VALUE_LIST": "an operand list (%a, %b)",
    "INDEX_LIST": "an index list [%i, %j]",
    "RESULTS": "an operation",
    "FMT_BOOL": "'true' or 'false'",
    "$END": "end of file",
}


# FMT_: the op-name terminals generated from assembly formats (parser/grammar.py)
_OP_PREFIXES = ("ARITH_", "TIR_", "TE_", "RELAY_", "FMT_")


def _describe(name, terminals):
    d = _DESCRIBE.get(name)
    if d:
        return d
    # op keywords of every dialect read as one thing to a user
    if name.startswith(_OP_PREFIXES) or name in ("MODULE_KW", "RETURN_KW", "YIELD_KW"):
        return "an operation"
    t = terminals.get(name)
    if t is not None and isinstance(t.pattern, PatternStr):
        return f"'{t.pattern.value}'"
    return name.lower()


def _expected(names, terminals):
    descs = []
    for n in sorted(names):
        d = _describe(n, terminals)
        if d not in descs:
            descs.append(d)
    # the most useful few first: punctuation and keywords read best
    descs.sort(key=lambda d: (not d.startswith("'"), d))
    if not descs:
        return ""
    if len(descs) == 1:
        return f"expected {descs[0]}"
    if len(descs) > 8:
        return "expected one of " + ", ".join(descs[:8]) + ", ..."
    return "expected one of " + ", ".join(descs)


def _end_position(text: str, line_offset: int):
    stripped = text.rstrip()
    line = stripped.count("\n") + 1
    col = len(stripped) - (stripped.rfind("\n") + 1) + 1
    return line + line_offset, col


def to_diagnostic(e: UnexpectedInput, text: str, filename: str, line_offset: int, terminals) -> DiagnosticError:
    if isinstance(e, UnexpectedCharacters):
        ch = text[e.pos_in_stream] if e.pos_in_stream < len(text) else ""
        shown = repr(ch)[1:-1] if ch.isprintable() else f"\\x{ord(ch):02x}" if ord(ch) < 256 else f"U+{ord(ch):04X}"
        msg = f"unexpected character '{shown}'"
        exp = _expected(e.allowed or (), terminals)
        if exp:
            msg += f"; {exp}"
        return DiagnosticError(FileLoc(filename, e.line + line_offset, e.column), msg)
    if isinstance(e, UnexpectedToken):
        tok = e.token
        exp = _expected(e.expected or e.accepts or (), terminals)
        if tok.type == "$END" or tok.line is None:
            line, col = _end_position(text, line_offset)
            msg = "unexpected end of file" + (f"; {exp}" if exp else "")
            return DiagnosticError(FileLoc(filename, line, col), msg)
        shown = str(tok) if len(str(tok)) <= 40 else str(tok)[:37] + "..."
        msg = f"unexpected '{shown}'" + (f"; {exp}" if exp else "")
        return DiagnosticError(FileLoc(filename, tok.line + line_offset, tok.column), msg)
    if isinstance(e, UnexpectedEOF):
        line, col = _end_position(text, line_offset)
        return DiagnosticError(FileLoc(filename, line, col), "unexpected end of file")
    return DiagnosticError(FileLoc(filename, 1 + line_offset, 1), str(e))
