"""--cse: common subexpression elimination (TVM's EliminateCommonSubexpr).

Two pure ops compute the same value when they have the same name, the same
operands, equal attributes and the same result types.  The pass walks each
block in order with a table ``key -> earlier op``; an op whose key is in the
table is replaced by the earlier op's results and erased.  Because the
earlier op sits before it in the same block (or in an enclosing block), it
dominates every use: the rewrite is always valid.  Nested regions see the
enclosing blocks' tables (a scoped table), but nothing crosses an
isolated-from-above op such as a function.  So an ``if`` branch, a
``match`` arm or a closure body reuses a value computed before it, and
sibling branches never share one (neither dominates the other).  Ops with
regions are never merged themselves; the binders of two arms are distinct
values, so nothing keyed on them merges across arms.

Commutative ops (add, multiply, maximum, ...) key their operands as a
sorted pair, so ``add(%a, %b)`` and ``add(%b, %a)`` merge.  Constants key on
their type and a digest of their bytes, so equal values merge (and -0.0 stays
apart from 0.0).  Calls to relay functions are pure and merge too.
Replacing an op makes its users' keys change, but users come later in the
same sweep, so one sweep reaches the fixed point.  Linear (hashing aside).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir.pass_manager import ModulePass
from ....ir.traits import COMMUTATIVE, ISOLATED_FROM_ABOVE, PURE, TERMINATOR
from . import effect_free_functions, relay_functions
from ..ops.function import CallOp, ConstantOp, FuncOp


@dataclass
class CommonSubexprElimination(ModulePass):
    """Merge identical pure ops."""

    NAME = "cse"
    OP = "relay.func"

    def run(self, module, ctx):
        functions = effect_free_functions(module)
        n = 0
        for func in relay_functions(module):
            n += cse_region(func.regions[0], functions)
        ctx.stat(self, "ops-merged", n)

    def run_on(self, func, ctx):
        ctx.stat(self, "ops-merged", cse_region(func.regions[0], None))


def cse_region(region, functions, scopes=None) -> int:
    scopes = [] if scopes is None else scopes
    merged = 0
    for block in region.blocks:
        scopes.append({})
        merged += _cse_block(block, functions, scopes)
        scopes.pop()
    return merged


def _cse_block(block, functions, scopes) -> int:
    merged = 0
    table = scopes[-1]
    for op in block.ops:
        if op.regions:
            if ISOLATED_FROM_ABOVE not in op.traits:
                for r in op.regions:
                    merged += cse_region(r, functions, scopes)
            continue
        key = op_key(op, functions)
        if key is None:
            continue
        try:
            prev = None
            for t in reversed(scopes):
                prev = t.get(key)
                if prev is not None:
                    break
        except TypeError:  # an unhashable attribute value
            continue
        if prev is None:
            table[key] = op
            continue
        for r, pr in zip(op.results, prev.results):
            if pr.name is None and r.name is not None:
                pr.name = r.name
            r.replace_all_uses_with(pr)
        op.erase()
        merged += 1
    return merged


def op_key(op, functions):
    """A hashable key equal for ops that compute the same values, or None."""
    if not op.results or TERMINATOR in op.traits:
        return None
    if PURE not in op.traits:
        if not isinstance(op, CallOp) or functions is None:
            return None
        callee = functions.get(op.attributes["callee"].name)
        if not isinstance(callee, FuncOp):
            return None
    types = tuple(r.type for r in op.results)
    if isinstance(op, ConstantOp):
        # a DenseAttr hashes by content, a splat by its one element (never
        # written out in full)
        return (op.name, types, op.attributes["value"])
    # values hash by identity; the key holds them, so no id is ever reused
    operands = tuple(op.operands)
    if COMMUTATIVE in op.traits and len(operands) == 2 and id(operands[1]) < id(operands[0]):
        operands = (operands[1], operands[0])
    attrs = tuple((k, type(v).__name__, v) for k, v in op.attributes.items())
    return (op.name, operands, attrs, types)
