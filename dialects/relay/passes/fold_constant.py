"""--fold-constant: evaluate what is known at compile time (TVM's FoldConstant).

One forward sweep over each (non-primitive) relay.func, its body and every
block nested in it (``if`` / ``match`` branches, closures), in SSA order:

* an op whose every operand is a ``relay.constant`` is evaluated by the
  reference interpreter (the op's ``compute``) and replaced by a new
  ``relay.constant``; an op that returns a tuple (``split``,
  ``nn.batch_norm``) becomes a ``tuple`` of constants;
* ``get_item`` of a ``tuple`` op is the field itself (so the projections
  of a folded tuple fold too);
* ``shape_of`` and ``ndarray_size`` of a value whose type is static fold
  even when the value is not constant: only its type matters;
* a creation op with no operands (``zeros``, ``arange``, ...) folds when its
  result has at most ``MAX_CREATED`` elements;
* an elementwise op (pattern elemwise or broadcast) of splats folds to a
  splat, computed on one element of each operand, so it costs nothing
  whatever the size.

Any other folding whose result would take more than max_constant_bytes()
(env ``TVMD_MAX_CONSTANT_BYTES``, ir/attributes.py) is an error at the op,
raised before the evaluation allocates anything.

Because the sweep runs in order, a folded result feeds the folding of the
ops after it, so whole constant subgraphs (a weight's layout_transform, a
chain of arithmetic on constants, a reshape of a static shape) fold in one
pass.  Never folded: calls (they may be kernels), ops with regions, ops
without a compute, ops whose class says ``STATEFUL = True``, and qnn ops
unless ``fold-qnn=true`` (TVM's ``fold_qnn``: they are canonicalised to
integer arithmetic first).  An evaluation that fails (an integer division by
zero among constants) leaves the op for run time.  Constants whose uses all
went away are erased at the end.

The new constant's resource key (the name its bytes get in the resource
section) is the folded value's name when it has one, else the first
operand constant's key with the op's name appended, so a folded weight
prints as ``dense_resource<w_layout_transform>`` rather than ``blob``.

Linear: one visit per op, plus the cost of the evaluations themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir.pass_manager import option
from . import GraphFunctionPass, defining_constant, erase_if_dead
from ..ops.base import RelayOp
from ..ops.control import TupleGetItemOp, TupleOp
from ..ops.function import CallOp, ConstantOp
from ..ops.tensor import NdarraySizeOp, ShapeOfOp

# a creation op with no operands folds only up to this many elements
MAX_CREATED = 1 << 16

SHAPE_OPS = (ShapeOfOp, NdarraySizeOp)


@dataclass
class FoldConstant(GraphFunctionPass):
    """Evaluate subgraphs whose inputs are all constants."""

    NAME = "fold-constant"
    fold_qnn: bool = option(False, "fold qnn ops too (TVM's fold_qnn)")

    def run_on(self, func, ctx):
        from .fuse_ops import function_blocks
        folded = removed = 0
        for block in function_blocks(func):
            f, r = fold_block(block, self.fold_qnn)
            folded += f
            removed += r
        ctx.stat(self, "ops-folded", folded)
        ctx.stat(self, "constants-removed", removed)


def foldable(op, fold_qnn: bool = False) -> bool:
    """May `op` be evaluated when its operands are constants?"""
    if not isinstance(op, RelayOp) or op.regions or len(op.results) != 1:
        return False
    if isinstance(op, (CallOp, ConstantOp, TupleOp)) or type(op).compute is RelayOp.compute:
        return False
    if getattr(op, "STATEFUL", False) or (not fold_qnn and op.name.startswith("relay.qnn.")):
        return False
    t = op.results[0].type
    if not t.is_complete:
        return False
    if not op.operands:
        n = t.num_elements() if hasattr(t, "num_elements") and t.is_static else None
        return n is not None and n <= MAX_CREATED
    return True


def fold_block(block, fold_qnn: bool = False):
    """Fold what can be folded in `block`; returns (ops folded, constants erased)."""
    folded = 0
    used = []
    for op in list(block.ops):
        if op.parent is None:
            continue
        if isinstance(op, TupleGetItemOp):
            t = op.operands[0].defining_op()
            if isinstance(t, TupleOp):
                replace_value(op, t.operands[op.attributes["index"]])
                used.append(t)
                folded += 1
                continue
        if isinstance(op, SHAPE_OPS) and op.operands and _static(op.operands[0].type):
            new = [shape_constant(op)]
        else:
            if not foldable(op, fold_qnn):
                continue
            consts = [defining_constant(v) for v in op.operands]
            if None in consts:
                continue
            new = constant_ops_for(op, consts)
            if new is None:
                continue
            used.extend(consts)
        for n in new:
            block.insert_before(op, n)
        r = op.results[0]
        if r.name and new[-1].results[0].name is None:
            new[-1].results[0].name = r.name
        r.replace_all_uses_with(new[-1].results[0])
        op.erase()
        folded += 1
    return folded, erase_if_dead(used)


def replace_value(op, value):
    r = op.results[0]
    if value.name is None and r.name is not None:
        value.name = r.name
    r.replace_all_uses_with(value)
    op.erase()


def _static(t):
    from ....ir.types import TensorType
    return isinstance(t, TensorType) and t.is_static


def constant_ops_for(op, consts):
    """New ops holding op's value on the constants `consts` (a constant, or
    constants and a tuple for a tuple value), last one the value; None when
    the evaluation fails.  An elementwise op of splats folds to a splat at no
    cost; any other value larger than max_constant_bytes() is an error at
    the op, raised before anything is evaluated."""
    from ....ir.attributes import check_constant_size
    from ....ir.diagnostics import DiagnosticError
    from ..interpreter import evaluate_op
    value = splat_value(op, consts)
    if value is None:
        check_constant_size(op.results[0].type, op.loc, f"fold-constant: folding '{op.name}'")
        try:
            value = evaluate_op(op, [c.attributes["value"].array for c in consts])
        except DiagnosticError:
            return None
    return value_ops(op, value, op.results[0].type, consts)


def splat_value(op, consts):
    """op's value as a splat when op is elementwise (pattern ELEMWISE or
    BROADCAST, its result shape the broadcast of its operands' shapes) and
    every operand is a splat: the op runs on one element of each (shape
    1x...x1, so numpy's type rules are those of the full arrays) and the
    result is broadcast back, which is exactly the full evaluation.  None
    when that does not apply or the one-element evaluation fails (the full
    evaluation then decides)."""
    import numpy as np

    from ....ir.types import TensorType
    from ..ops.base import OpPattern
    t = op.results[0].type
    if op.PATTERN > OpPattern.BROADCAST or not consts or type(t) is not TensorType:
        return None
    attrs = [c.attributes["value"] for c in consts]
    if not all(a.is_splat() for a in attrs):
        return None
    try:
        if np.broadcast_shapes(*(a.array.shape for a in attrs)) != tuple(t.shape):
            return None
    except ValueError:
        return None
    ones = [a.array[(slice(0, 1),) * a.array.ndim] for a in attrs]
    try:
        out = np.asarray(op.compute(*ones))
    except Exception:   # the full evaluation reports it, or leaves the op
        return None
    if out.size != 1 or out.dtype != t.dtype:
        return None
    return np.broadcast_to(out.reshape(()), tuple(t.shape))


def value_ops(op, value, t, consts, suffix=""):
    from ....ir.types import TupleType
    if isinstance(t, TupleType):
        out, fields = [], []
        for i, (v, ft) in enumerate(zip(value, t.types)):
            sub = value_ops(op, v, ft, consts, f"{suffix}_{i}")
            out.extend(sub)
            fields.append(sub[-1].results[0])
        out.append(TupleOp(fields, [t], {}, (), op.loc))
        return out
    return [make_constant(op, value, consts, t, suffix)]


def make_constant(op, value, consts, t=None, suffix=""):
    """A relay.constant holding `value`, replacing `op` (or its field)."""
    from ....ir.attributes import DenseAttr
    name = op.results[0].name
    if name and not name[0].isdigit():
        key = name + suffix
    elif consts:
        c = consts[0]
        base = c.attributes["value"].key or c.results[0].name
        key = f"{base}_{op.name[len('relay.'):].replace('.', '_')}{suffix}" if base else None
    else:
        key = None
    return ConstantOp.get(DenseAttr(value, t or op.results[0].type, key), loc=op.loc)


def shape_constant(op):
    """shape_of / ndarray_size of a statically shaped value, from its type."""
    import numpy as np

    from ....ir.types import to_numpy_dtype
    shape = op.operands[0].type.shape
    t = op.results[0].type
    dtype = to_numpy_dtype(t.element_type)
    if isinstance(op, ShapeOfOp):
        arr = np.array(shape, dtype=dtype).reshape(t.shape)
    else:
        arr = np.array(int(np.prod(shape, dtype=np.int64)), dtype=dtype).reshape(t.shape)
    return make_constant(op, arr, [], t)
