"""Schedules in a file of their own: ``tvm-opt k.te --apply-schedule=s.te``.

The file holds one block per scheduled te.func; inside, te schedule ops
exactly as they would stand before the function's ``return``, naming the
function's parameters and stages by their SSA names::

    // s.te
    te.schedule @mm {
      %i, %j, %k = te.axes %C
      %jo, %ji = te.split %j {factor = 8}
      %AS = te.cache_read %A, %C {scope = "shared"} : tensor<64x64xf32>
    }

    block  ::= 'te.schedule' '@' NAME '{' NEWLINE  schedule-op*  '}'

(the header and the closing brace each on a line of their own; ``//``
comments anywhere).  Each block's ops are parsed with the function's names
in scope, keep their locations in the schedule file (so a bad schedule is a
diagnostic at its line there) and are appended to the function, after any
schedule ops it already has; then the schedule is applied as usual.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*te\.schedule\s+@([\w$.\-]+)\s*\{\s*(//.*)?$")
_CLOSE = re.compile(r"^\s*\}\s*(//.*)?$")
_BLANK = re.compile(r"^\s*(//.*)?$")


def read_blocks(text, filename):
    """[(function name, first body line (0-based), body text)]."""
    from ...ir.diagnostics import DiagnosticError
    from ...ir.location import FileLoc
    lines = text.split("\n")
    blocks, k = [], 0
    while k < len(lines):
        line = lines[k]
        m = _HEADER.match(line)
        if m is None:
            if not _BLANK.match(line):
                raise DiagnosticError(FileLoc(filename, k + 1, len(line) - len(line.lstrip()) + 1),
                                      "expected 'te.schedule @name {' (a schedule file holds te.schedule blocks)")
            k += 1
            continue
        start = k + 1
        end = start
        while end < len(lines) and not _CLOSE.match(lines[end]):
            end += 1
        if end == len(lines):
            raise DiagnosticError(FileLoc(filename, k + 1, 1), f"te.schedule @{m.group(1)} has no closing '}}'")
        blocks.append((m.group(1), k + 1, start, "\n".join(lines[start:end])))
        k = end + 1
    return blocks


def load_schedule_file(module, path):
    """Append the schedule ops of `path` to the te.funcs of `module`."""
    from ...ir.diagnostics import DiagnosticError
    from ...ir.location import FileLoc
    from ...dialects.te.ops import FuncOp
    from ...parser import read_source
    _, text = read_source(path)
    funcs = {op.attributes["sym_name"]: op for op in module.body.ops if isinstance(op, FuncOp)}
    for name, header_line, start, body in read_blocks(text, path):
        f = funcs.get(name)
        if f is None:
            known = ", ".join("@" + n for n in funcs) or "none"
            raise DiagnosticError(FileLoc(path, header_line, 1),
                                  f"no te.func @{name} to schedule in the input (te.funcs: {known})")
        ops = parse_in_scope(body, path, start, f)
        ret = f.return_op
        for op in ops:
            op.detach()
            f.body.insert_before(ret, op)


def scope_names(func):
    """SSA name -> Value for the function's parameters and top-level results."""
    names = {a.name: a for a in func.body.args if a.name}
    for op in func.body.ops:
        for r in op.results:
            if r.name:
                names[r.name] = r
    return names


def parse_in_scope(text, filename, line_offset, func):
    """Parse schedule ops with `func`'s names defined; returns the ops."""
    from ...dialects.te.schedule_ops import ScheduleOp
    from ...parser import parse_module
    from ...parser.grammar import get_parser
    p = get_parser()
    b = p.builder
    names = scope_names(func)
    cls_reset = type(b).reset

    def reset(*a, **k):
        cls_reset(b, *a, **k)
        b.ctx[0].names.update(names)

    b.reset = reset
    try:
        m = parse_module(text, filename, line_offset, verify=False)
    finally:
        del b.reset
    ops = list(m.body.ops)
    for op in ops:
        if not isinstance(op, ScheduleOp):
            raise op.error("is not a schedule op; a schedule file holds te schedule ops only")
    return ops
