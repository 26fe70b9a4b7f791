"""--fold-constant: evaluate ops whose operands are all constants (TVM's FoldConstant).

One forward sweep per (non-primitive) relay.func, in SSA order: an op whose
every operand is a ``relay.constant`` is evaluated by the reference
interpreter (the op's ``compute``) and replaced by a new ``relay.constant``.
Because the sweep runs in order, a folded result feeds the folding of the
ops after it, so whole constant subgraphs (a weight's layout_transform, a
chain of arithmetic on constants) fold in one pass.  Calls are never folded
(they may be kernels), nor ops without a compute.  Constants whose uses all
went away are erased at the end.

The new constant's resource key (the name its bytes get in the resource
section) is the folded value's name when it has one, else the first
operand constant's key with the op's name appended, so a folded weight
prints as ``dense_resource<w_layout_transform>`` rather than ``blob``.

Linear: one visit per op, plus the cost of the evaluations themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir.pass_manager import ModulePass
from . import defining_constant, erase_if_dead, relay_functions


@dataclass
class FoldConstant(ModulePass):
    """Evaluate subgraphs whose inputs are all constants."""

    NAME = "fold-constant"

    def run(self, module, ctx):
        from .infer_type import ensure_types
        ensure_types(module)
        for func in relay_functions(module, include_primitive=False):
            self.run_on(func, ctx)

    def run_on(self, func, ctx):
        folded, removed = fold_block(func.regions[0].blocks[0])
        ctx.stat(self, "ops-folded", folded)
        ctx.stat(self, "constants-removed", removed)


def foldable(op) -> bool:
    from ..ops.base import RelayOp
    if not isinstance(op, RelayOp) or op.regions or len(op.results) != 1 or not op.operands:
        return False
    if op.name in ("relay.call", "relay.constant") or type(op).compute is RelayOp.compute:
        return False
    return op.results[0].type.is_complete


def fold_block(block):
    """Fold every all-constant op in `block`; returns (ops folded, constants erased)."""
    from ..interpreter import evaluate_op
    folded = 0
    used_consts = []
    for op in list(block.ops):
        if not foldable(op):
            continue
        consts = [defining_constant(v) for v in op.operands]
        if None in consts:
            continue
        value = evaluate_op(op, [c.attributes["value"].array for c in consts])
        new = make_constant(op, value, consts)
        block.insert_before(op, new)
        r = op.results[0]
        new.results[0].name = r.name
        r.replace_all_uses_with(new.results[0])
        op.erase()
        used_consts.extend(consts)
        folded += 1
    return folded, erase_if_dead(used_consts)


def make_constant(op, value, consts):
    """A relay.constant holding `value`, replacing `op`."""
    from ....ir.attributes import DenseAttr
    from ..ops.function import ConstantOp
    name = op.results[0].name
    if name and not name[0].isdigit():
        key = name
    else:
        c = consts[0]
        base = c.attributes["value"].key or c.results[0].name
        key = f"{base}_{op.name[len('relay.'):].replace('.', '_')}" if base else None
    return ConstantOp.get(DenseAttr(value, op.results[0].type, key), loc=op.loc)
