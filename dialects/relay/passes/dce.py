"""--dce: dead-code elimination (TVM's DeadCodeElimination, for SSA graphs).

1. In every relay.func, erase pure ops none of whose results is used, to a
   fixed point.  A worklist makes it linear: every op is checked once, and
   erasing an op re-checks only the producers of its operands.  ``relay.call``
   counts as pure when its callee is a relay.func (relay functions have no
   side effects); calls to lowered te/tir kernels are kept.
2. Erase module-level relay.funcs marked ``primitive`` (fused kernels) that
   nothing references any more: reference counts over every symbol an
   attribute names, dropped as dead kernels go, so a kernel only a dead
   kernel used goes too.  Other functions are public entry points and stay.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir.attributes import SymbolRef
from ....ir.pass_manager import ModulePass
from ....ir.traits import PURE, TERMINATOR
from . import RELAY_FUNC, is_primitive, relay_functions


@dataclass
class DeadCodeElimination(ModulePass):
    """Remove unused pure ops and unreferenced primitive functions."""

    NAME = "dce"

    def run(self, module, ctx):
        functions = {op.attributes["sym_name"]: op for op in module.regions[0].blocks[0].ops
                     if isinstance(op.attributes.get("sym_name"), str)}
        n = 0
        for func in relay_functions(module):
            n += erase_dead_ops(func.regions[0].blocks[0], functions)
        ctx.stat(self, "ops-erased", n)
        ctx.stat(self, "functions-erased", erase_dead_functions(module))

    def run_on(self, func, ctx):
        ctx.stat(self, "ops-erased", erase_dead_ops(func.regions[0].blocks[0], None))


def removable(op, functions) -> bool:
    """Pure, no regions, not a terminator, and has results to be unused."""
    if not op.results or op.regions or TERMINATOR in op.traits:
        return False
    if PURE in op.traits:
        return True
    if op.name == "relay.call" and functions is not None:
        callee = functions.get(op.attributes["callee"].name)
        return callee is not None and callee.name == RELAY_FUNC
    return False


def erase_dead_ops(block, functions) -> int:
    work = list(block.ops)   # popped from the end: users before producers
    erased = 0
    while work:
        op = work.pop()
        if op.parent is None or not removable(op, functions):
            continue
        if any(r.uses for r in op.results):
            continue
        producers = [v.defining_op() for v in op.operands]
        op.erase()
        erased += 1
        for d in producers:
            if d is not None and d.parent is block:
                work.append(d)
    return erased


def erase_dead_functions(module) -> int:
    body = module.regions[0].blocks[0]
    refs: dict[str, int] = {}
    holders: dict = {}   # top-level op -> symbols referenced from inside it
    for top in body.ops:
        names = []
        for op in top.walk():
            for v in op.attributes.values():
                _symbols_in(v, names)
        holders[top] = names
        for s in names:
            refs[s] = refs.get(s, 0) + 1
    kernels = {op.attributes["sym_name"]: op for op in body.ops
               if op.name == RELAY_FUNC and is_primitive(op)}
    work = [f for s, f in kernels.items() if not refs.get(s)]
    erased = 0
    while work:
        f = work.pop()
        if f.parent is None:
            continue
        f.erase()
        erased += 1
        for s in holders.get(f, ()):
            refs[s] -= 1
            if refs[s] == 0 and s in kernels:
                work.append(kernels[s])
    return erased


def _symbols_in(v, out):
    if isinstance(v, SymbolRef):
        out.append(v.name)
    elif isinstance(v, (tuple, list)):
        for x in v:
            _symbols_in(x, out)
    elif isinstance(v, dict):
        for x in v.values():
            _symbols_in(x, out)
