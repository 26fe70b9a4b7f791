"""--dce: dead-code elimination (TVM's DeadCodeElimination, for SSA graphs).

1. In every relay.func, erase pure ops none of whose results is used, to a
   fixed point, in the body and in every region nested in it (``if``
   branches, ``match`` arms, closure bodies).  A worklist makes it linear:
   every op is checked once, and erasing an op re-checks only the producers
   of the values it (or anything inside it) used.  ``relay.call`` counts as
   pure when its callee is a relay.func (relay functions have no side
   effects); calls to lowered te/tir kernels are kept.  An unused ``fn``
   goes (making a closure runs nothing); an unused ``if`` or ``match`` goes
   when everything its regions run could go.
2. Erase module-level relay.funcs marked ``primitive`` (fused kernels) that
   nothing references any more: reference counts over every symbol an
   attribute names, dropped as dead kernels go, so a kernel only a dead
   kernel used goes too.  Other functions are public entry points and stay.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir.attributes import SymbolRef
from ....ir.pass_manager import ModulePass
from ....ir.traits import ISOLATED_FROM_ABOVE, PURE, TERMINATOR
from . import effect_free_functions, is_primitive, relay_functions
from ..ops.closure import FnOp
from ..ops.control import IfOp
from ..ops.adt import MatchOp
from ..ops.function import CallOp, FuncOp


@dataclass
class DeadCodeElimination(ModulePass):
    """Remove unused pure ops and unreachable private functions.

    On one function only its dead ops go; on the module, unreferenced
    primitive functions too."""

    NAME = "dce"
    OP = "relay.func"

    def run(self, module, ctx):
        functions = effect_free_functions(module)
        n = 0
        for func in relay_functions(module):
            n += erase_dead_ops(func.regions[0].blocks[0], functions)
        ctx.stat(self, "ops-erased", n)
        ctx.stat(self, "functions-erased", erase_dead_functions(module))

    def run_on(self, func, ctx):
        ctx.stat(self, "ops-erased", erase_dead_ops(func.regions[0].blocks[0], None))


# Ops with regions that compute a value and may go when it is unused.
_VALUE_REGION_OPS = (IfOp, MatchOp)


def removable(op, functions) -> bool:
    """Has results to be unused, is not a terminator, and running it has no
    effect besides its results."""
    if not op.results or TERMINATOR in op.traits:
        return False
    if op.regions:
        if isinstance(op, FnOp):
            return True   # a closure's body runs only when it is called
        if not isinstance(op, _VALUE_REGION_OPS):
            return False
        return all(TERMINATOR in o.traits or removable(o, functions)
                   for r in op.regions for b in r.blocks for o in b.ops)
    if PURE in op.traits:
        return True
    if isinstance(op, CallOp) and functions is not None:
        callee = functions.get(op.attributes["callee"].name)
        return isinstance(callee, FuncOp)
    return False


def erase_dead_ops(block, functions) -> int:
    """Erase dead ops in `block` and the regions nested in it."""
    return erase_dead(_ops_in(block), functions)   # popped from the end: users before producers, inner before outer


def erase_dead(work, functions=None) -> int:
    """Erase the ops of the list `work` that are dead and removable, and then
    the producers each one erased leaves dead, popping from the end; how
    many.  `functions` (name -> op) lets calls of pure functions go."""
    erased = 0
    while work:
        op = work.pop()
        if op.parent is None or not removable(op, functions):
            continue
        if any(r.uses for r in op.results):
            continue
        if op.regions:
            producers = [v.defining_op() for o in op.walk() for v in o.operands]
        else:
            producers = [v.defining_op() for v in op.operands]
        op.erase()
        erased += 1
        for d in producers:
            # not the ops that went with it (inside its regions)
            if d is not None and d.parent is not None and not op.is_ancestor(d):
                work.append(d)
    return erased


def _ops_in(block):
    """Every op in `block` and its nested (not isolated) regions, pre-order."""
    out = []
    stack = [iter(block.ops)]
    while stack:
        op = next(stack[-1], None)
        if op is None:
            stack.pop()
            continue
        out.append(op)
        if op.regions and ISOLATED_FROM_ABOVE not in op.traits:
            stack.append(o for r in op.regions for b in r.blocks for o in b.ops)
    return out


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
               if isinstance(op, FuncOp) and is_primitive(op)}
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
