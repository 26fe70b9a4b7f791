"""--canonicalize: fold and simplify with rewrite patterns (MLIR's canonicalizer).

Runs ``apply_patterns_greedily`` (ir/rewriter.py) over the module: a
worklist of every op; dead pure ops are erased, each op's ``fold()`` is
tried (constants it returns become ``relay.constant``), then the patterns
below; users of whatever changed go back on the worklist, to a fixed point.

Patterns (each keeps the value bit-for-bit, up to the sign of a zero):

* ``add(x, 0)``, ``add(0, x)``, ``subtract(x, 0)``, ``multiply(x, 1)``,
  ``multiply(1, x)``, ``divide(x, 1)`` -> ``x``, when the constant is a splat
  and broadcasting it leaves x's type unchanged;
* ``maximum(x, x)``, ``minimum(x, x)`` -> ``x``; ``nn.relu(nn.relu(x))`` ->
  ``nn.relu(x)``;
* ``layout_transform(x) {A -> A}`` -> ``x``;
  ``layout_transform(layout_transform(x) {A -> B}) {B -> C}`` ->
  ``layout_transform(x) {A -> C}``, or ``x`` when C is A;
* ``reshape(reshape(x))`` -> one reshape; a reshape, ``transpose``,
  ``squeeze`` or ``expand_dims`` that leaves the type as it is -> its input;
  ``transpose(transpose(x, p), q)`` -> one transpose (or x);
  ``squeeze(expand_dims(x))`` and ``expand_dims(squeeze(x))`` that restore
  x's type -> x; ``cast`` to the same dtype -> its input; ``concatenate``
  of one input -> the input; ``get_item(tuple(...))`` -> the field;
* ``reshape(nn.dense(reshape(x, [-1, K]), w), [..., N])``, TVM's ONNX
  import of a MatMul on a 3-d or higher tensor, -> ``nn.dense(x, w)`` on
  x as it is (dense takes N-d data): FuseOps then sees the dense followed
  directly by its bias and activation, and makes one kernel of them where
  the reshape would have split it in two;
* ``reshape(transpose(reshape(x, S1), p), x.shape)`` that permutes the
  entries of one axis (ShuffleNet's channel shuffle) -> ``take`` of a
  constant permutation along it (a layout-agnostic "axis" op);
* an op whose operands are all constants -> its value, computed by the
  reference interpreter (as --fold-constant does).

With ``bias-add-to-add=true`` (TVM's CanonicalizeOps), ``nn.bias_add(x, b)``
becomes ``add(x, expand_dims(b))``; by default it stays, an op the fusion
and layout passes understand as it is.  Op classes may add patterns of
their own with a ``canonicalization_patterns()`` classmethod.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir.pass_manager import ANY, ModulePass, option
from ....ir.rewriter import RewritePattern, apply_patterns_greedily
from . import defining_constant
from ..ops.elemwise import ReluOp
from ..ops.transform import LayoutTransformOp


@dataclass
class Canonicalize(ModulePass):
    """Fold and apply each op's canonicalization patterns, to a fixed point.

    Op-agnostic: nested under any anchor it rewrites inside that op."""

    NAME = "canonicalize"
    OP = ANY
    max_iterations: int = option(10, "the most sweeps over the IR before giving up on a fixed point")
    bias_add_to_add: bool = option(False, "rewrite nn.bias_add to add of a reshaped bias (TVM's CanonicalizeOps)")

    def validate(self):
        if self.max_iterations < 1:
            raise ValueError(f"max-iterations must be at least 1, got {self.max_iterations}")

    def run(self, module, ctx):
        from .infer_type import ensure_types
        ensure_types(module)
        self.run_on(module, ctx)

    def run_on(self, op, ctx):
        counter = CountingPatterns(patterns(self.bias_add_to_add))
        apply_patterns_greedily(op, counter.patterns, max_iterations=self.max_iterations,
                                materialize=materialize)
        ctx.stat(self, "patterns-applied", counter.count)


def materialize(value, type, loc):
    """A relay.constant for a folded value (a DenseAttr or an array)."""
    from ....ir.attributes import DenseAttr
    from ....ir.types import TensorType
    from ..ops.function import ConstantOp
    if not isinstance(type, TensorType):
        return None
    attr = value if isinstance(value, DenseAttr) else DenseAttr(value, type)
    return ConstantOp.get(attr, loc=loc)


def patterns(bias_add_to_add=False):
    from ....ir.core import OP_CLASSES
    from .canonicalize_shapes import shape_patterns
    out = [AddZero(), SubtractZero(), MultiplyOne(), DivideOne(), SameOperands("relay.maximum"),
           SameOperands("relay.minimum"), ReluRelu(), LayoutTransformIdentity(),
           LayoutTransformCompose(), FoldAllConstant()] + shape_patterns(bias_add_to_add)
    for cls in list(OP_CLASSES.values()):
        # only a class's own hook, so a base class's patterns are not added once per subclass
        if cls.name.startswith("relay.") and "canonicalization_patterns" in cls.__dict__:
            out.extend(cls.canonicalization_patterns())
    return out


class CountingPatterns:
    """Wraps patterns to count successful rewrites for the statistics."""

    def __init__(self, pats):
        self.count = 0
        self.patterns = [self._wrap(p) for p in pats]

    def _wrap(self, p):
        outer = self
        inner = p.match_and_rewrite

        def match_and_rewrite(op, rw):
            ok = inner(op, rw)
            if ok:
                outer.count += 1
            return ok
        p.match_and_rewrite = match_and_rewrite
        return p


# -- identity arithmetic --------------------------------------------------------

def splat_value(v):
    """The single value a splat constant holds, or None."""
    c = defining_constant(v)
    if c is None:
        return None
    a = c.attributes["value"]
    if not a.is_splat():
        return None
    return a.array.flat[0]


class _Identity(RewritePattern):
    """``op(x, c)`` (or ``op(c, x)`` when COMMUTES) -> x for splat c == IDENTITY."""

    IDENTITY = 0
    COMMUTES = True

    def match_and_rewrite(self, op, rw) -> bool:
        a, b = op.operands
        rtype = op.results[0].type
        sides = [(a, b), (b, a)] if self.COMMUTES else [(a, b)]
        for x, c in sides:
            if x.type is not rtype:
                continue  # broadcasting the constant would change x's shape or type
            val = splat_value(c)
            if val is not None and val == self.IDENTITY:
                rw.replace_op(op, [x])
                return True
        return False


class AddZero(_Identity):
    ROOT = "relay.add"
    IDENTITY = 0


class SubtractZero(_Identity):
    ROOT = "relay.subtract"
    IDENTITY = 0
    COMMUTES = False


class MultiplyOne(_Identity):
    ROOT = "relay.multiply"
    IDENTITY = 1


class DivideOne(_Identity):
    ROOT = "relay.divide"
    IDENTITY = 1
    COMMUTES = False


class SameOperands(RewritePattern):
    """``maximum(x, x)`` -> x (idempotent binary ops)."""

    def __init__(self, root):
        self.ROOT = root

    def match_and_rewrite(self, op, rw) -> bool:
        a, b = op.operands
        if a is b and a.type is op.results[0].type:
            rw.replace_op(op, [a])
            return True
        return False


class ReluRelu(RewritePattern):
    ROOT = "relay.nn.relu"

    def match_and_rewrite(self, op, rw) -> bool:
        d = op.operands[0].defining_op()
        if isinstance(d, ReluOp):
            rw.replace_op(op, [op.operands[0]])
            return True
        return False


# -- layout transforms --------------------------------------------------------------

class LayoutTransformIdentity(RewritePattern):
    ROOT = "relay.layout_transform"

    def match_and_rewrite(self, op, rw) -> bool:
        a = op.attributes
        if a["src_layout"] == a["dst_layout"] and op.operands[0].type is op.results[0].type:
            rw.replace_op(op, [op.operands[0]])
            return True
        return False


class LayoutTransformCompose(RewritePattern):
    ROOT = "relay.layout_transform"

    def match_and_rewrite(self, op, rw) -> bool:
        inner = op.operands[0].defining_op()
        if not isinstance(inner, LayoutTransformOp):
            return False
        if inner.attributes["dst_layout"] != op.attributes["src_layout"]:
            return False
        x = inner.operands[0]
        src, dst = inner.attributes["src_layout"], op.attributes["dst_layout"]
        if src == dst and x.type is op.results[0].type:
            rw.replace_op(op, [x])
            return True
        new = LayoutTransformOp.build(x, src_layout=src, dst_layout=dst, loc=op.loc)
        if new.results[0].type is not op.results[0].type:
            new.drop_operands()
            return False
        rw.replace_op_with(op, new)
        return True


# -- constant operands ----------------------------------------------------------------

class FoldAllConstant(RewritePattern):
    """An op whose operands are all constants becomes a constant."""

    ROOT = None
    BENEFIT = 0   # after the specific patterns

    def match_and_rewrite(self, op, rw) -> bool:
        from .fold_constant import constant_ops_for, foldable
        if not foldable(op):
            return False
        consts = [defining_constant(v) for v in op.operands]
        if None in consts or not consts:
            return False
        new = constant_ops_for(op, consts)
        if new is None:
            return False
        for n in new[:-1]:
            rw.insert_before(op, n)
        rw.replace_op_with(op, new[-1])
        return True
