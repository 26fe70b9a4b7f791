"""Building TE from Python: an op emitter with constant folding, and
``compute``, TVM's ``te.compute(shape, fcompute)``::

    e = Emitter(func.body)
    D = compute(e, T.TensorType((4, 8), T.f32),
                lambda e, i, j, k: e.binary("mul", e.read(A, [i, k]), e.read(W, [j, k])),
                reduce=[("k", 16)], reducer="sum", names=["i", "j"])
    s = ScheduleBuilder(e)
    i, j, k = s.axes(D)
    jo, ji = s.split(j, factor=4)

Index values (``e.add``, ``e.mul``, ...) are Python ints until an op needs
a Value, so ``x * 1 + 0`` emits nothing; ``e.binary`` is element
arithmetic.  Constants and index ops are memoized per block and found again
from nested blocks (the emitter only ever appends, so anything in an
enclosing block was emitted before, and dominates); with `const_block`
constants are hoisted to the start of that block (a function's body).
"""

from __future__ import annotations

from ...ir import types as T
from ...ir.core import Value
from ...ir.location import UNKNOWN
from ..arith import semantics as S
from ..arith.ops import AddIOp

# builder method -> the arith op it emits; constant operands fold through
# that op's index semantics (dialects/arith/semantics.py), the one home of
# what each op means
_INDEX_OPS = {"add": "arith.addi", "sub": "arith.subi", "mul": "arith.muli", "floordiv": "arith.floordivsi",
              "floormod": "arith.floormodsi", "min": "arith.minsi", "max": "arith.maxsi"}
# compare kind -> (cmpi predicate, cmpf predicate)
_CMP = {"lt": ("slt", "olt"), "le": ("sle", "ole"), "gt": ("sgt", "ogt"), "ge": ("sge", "oge"),
        "eq": ("eq", "oeq"), "ne": ("ne", "une")}


class Emitter:
    """Appends ops to one block at a time; ``at(block)`` moves it."""

    def __init__(self, block, loc=UNKNOWN, const_block=None):
        self.block = block
        self.loc = loc
        self.memos: dict = {}   # block -> {key: Value}
        self.const_block = const_block
        self._last_const = None
        self.result_dims = None   # the relay result being lowered: its dims (ints, index Values for '?')
        self.operand_dims = None  # and those of its operands

    def at(self, block):
        self.block = block
        return self

    def op(self, cls_name, operands, result_types, attrs=None, name=None):
        from ...ir.registry import get_op_class
        cls = get_op_class(cls_name)
        op = cls(list(operands), list(result_types), attrs or {}, (), self.loc)
        self.block.append(op)
        if name is not None and op.results:
            op.results[0].name = name
        return op.results[0] if len(op.results) == 1 else op

    # -- memo --------------------------------------------------------------------

    def lookup(self, key):
        b = self.block
        while b is not None:
            d = self.memos.get(b)
            if d is not None and key in d:
                return d[key]
            op = b.parent_op
            b = op.parent if op is not None else None
        return None

    def remember(self, key, value):
        self.memos.setdefault(self.block, {})[key] = value
        return value

    # -- constants and index math ------------------------------------------------

    def const(self, value, type=T.index) -> Value:
        if T.is_float(type):
            value = float(value)
        elif type is T.i1:
            value = bool(value)
        else:
            value = int(value)
        key = ("const", type, value, str(value))   # str: keep 0.0 and -0.0 apart
        v = self.lookup(key)
        if v is not None:
            return v
        name = "cst" if T.is_float(type) else (str(value).lower() if type is T.i1 else f"c{value}")
        if self.const_block is None:
            return self.remember(key, self.op("arith.constant", [], [type], {"value": value}, name=name))
        from ...ir.registry import get_op_class
        op = get_op_class("arith.constant")([], [type], {"value": value}, (), self.loc)
        cb = self.const_block
        if self._last_const is None:
            cb.prepend(op)
        else:
            cb.insert_after(self._last_const, op)
        self._last_const = op
        op.results[0].name = name
        self.memos.setdefault(cb, {})[key] = op.results[0]
        return op.results[0]

    def val(self, x) -> Value:
        """A Value for an index (int or Value) or condition (bool or Value)."""
        if isinstance(x, Value):
            return x
        if isinstance(x, bool):
            return self.const(x, T.i1)
        return self.const(x)

    def index(self, kind, a, b):
        name = _INDEX_OPS[kind]
        if isinstance(a, int) and isinstance(b, int):
            return S.BINARY[name].index(a, b)
        if kind == "add":
            if a == 0:
                return b
            if b == 0:
                return a
        elif kind == "sub":
            if b == 0:
                return a
            if a is b:
                return 0
            d = a.defining_op() if isinstance(a, Value) else None
            if isinstance(d, AddIOp) and b in d.operands:   # (x + b) - b
                return d.operands[1] if d.operands[0] is b else d.operands[0]
        elif kind == "mul":
            if a == 0 or b == 0:
                return 0
            if a == 1:
                return b
            if b == 1:
                return a
        elif kind == "floordiv" and b == 1:
            return a
        elif kind == "floormod" and b == 1:
            return 0
        key = ("ix", kind, a, b)
        v = self.lookup(key)
        if v is None:
            v = self.remember(key, self.op(name, [self.val(a), self.val(b)], [T.index]))
        return v

    def add(self, a, b):
        return self.index("add", a, b)

    def sub(self, a, b):
        return self.index("sub", a, b)

    def mul(self, a, b):
        return self.index("mul", a, b)

    def floordiv(self, a, b):
        return self.index("floordiv", a, b)

    def floormod(self, a, b):
        return self.index("floormod", a, b)

    def cmp(self, kind, a, b):
        """Compare two index or two scalar values; a bool when both are ints."""
        ipred, fpred = _CMP[kind]
        if not isinstance(a, Value) and not isinstance(b, Value):
            if isinstance(a, float) or isinstance(b, float):
                return bool(S.CMPF[fpred](a, b))
            return S.INDEX_CMP[ipred](a, b)
        t = a.type if isinstance(a, Value) else b.type
        fl = T.is_float(t)
        if ipred[0] == "s" and T.reads_unsigned(t):
            ipred = "u" + ipred[1:]   # uiN and i1 compare as unsigned (numpy's order)
        av = a if isinstance(a, Value) else self.const(a, t)
        bv = b if isinstance(b, Value) else self.const(b, t)
        return self.op("arith.cmpf" if fl else "arith.cmpi", [av, bv], [T.i1],
                       {"predicate": fpred if fl else ipred})

    def and_(self, a, b):
        if a is True:
            return b
        if b is True:
            return a
        if a is False or b is False:
            return False
        return self.op("arith.andi", [a, b], [T.i1])

    def all_of(self, conds):
        c = True
        for x in conds:
            c = self.and_(c, x)
        return c

    # -- element values ------------------------------------------------------------

    def binary(self, kind, a, b):
        """add, sub, mul, div, max, min, floordiv, floormod on scalars of one type."""
        from ...dialects.arith.ops import binary_for
        cls = binary_for(kind, a.type)
        return self.op(cls.name, [a, b], [a.type])

    def select(self, c, a, b):
        if c is True or a is b:
            return a
        if c is False:
            return b
        return self.op("arith.select", [self.val(c), a, b], [a.type])

    def cast(self, v, to):
        """Convert a scalar to type `to` (no-op when it already is)."""
        src = v.type
        if src is to:
            return v
        if T.is_float(src) and T.is_float(to):
            if to.width == src.width:   # another format of one width (f16 / bf16, the float8s): through f32
                v, src = self.op("arith.extf", [v], [T.f32]), T.f32
            name = "arith.extf" if to.width > src.width else "arith.truncf"
        elif T.is_float(to):
            name = "arith.uitofp" if getattr(src, "unsigned", False) else "arith.sitofp"
        elif T.is_float(src):
            name = "arith.fptoui" if getattr(to, "unsigned", False) else "arith.fptosi"
        elif to is T.index or src is T.index:
            name = "arith.index_cast"
        elif to.bitwidth > src.bitwidth:
            name = "arith.extui" if src.unsigned else "arith.extsi"
        else:
            name = "arith.trunci"
        return self.op(name, [v], [to])

    def intrin(self, name, *args):
        from ..tir.ops import WORD_INTRINSICS
        t = WORD_INTRINSICS.get(name, args[0].type)   # a dot of words has its own type
        return self.op("te.intrin", list(args), [t], {"intrin": name})

    def read(self, tensor, indices, guard=True, else_value=0.0):
        """``te.read``; with a guard (an i1 Value) a guarded read."""
        et = tensor.type.element_type
        idx = [self.val(i) for i in indices]
        if guard is False:
            return self.const(else_value, et)
        if guard is True:
            return self.op("te.read", [tensor] + idx, [et])
        return self.op("te.read", [tensor] + idx + [guard], [et], {"else_value": float(else_value)})


def compute(e: Emitter, result_type, fcompute, reduce=(), reducer=None, names=None, name=None, sizes=None):
    """Append a te.compute to e's block: ``fcompute(e, *axes)`` emits the
    body (with ``e`` moved into it) and returns the element value.  `reduce`
    is [(axis name, extent)].  A '?' dimension of `result_type` takes its
    size from `sizes` (an index Value per '?', in order), else from
    ``e.result_dims`` (the dims, ints and index Values, of the relay result
    being lowered: a stage of the result's rank has its dims)."""
    from .ops import ComputeOp, YieldOp
    if sizes is None:
        sizes = dynamic_sizes(e, result_type)
    op = ComputeOp.create(result_type, [x for _, x in reduce], reducer, names, [n for n, _ in reduce], e.loc)
    sizes = list(sizes) + [x for _, x in reduce if type(x) is not int]   # then the '?' reduce extents
    if sizes:
        op.set_operands(sizes)
    outer = e.block
    outer.append(op)
    if name is not None:
        op.results[0].name = name
    e.at(op.body)
    v = fcompute(e, *op.body.args)
    op.body.append(YieldOp([v], [], {}, (), e.loc))
    e.at(outer)
    return op.results[0]


def dynamic_sizes(e, t):
    """The size Values of t's '?' dimensions, from ``e.result_dims``."""
    if all(d is not None for d in t.shape):
        return []
    dims = e.result_dims
    if dims is None or len(dims) != len(t.shape) or any(d is None and isinstance(x, int)
                                                        for d, x in zip(t.shape, dims)):
        raise NotImplementedError(f"no sizes for the dynamic dimensions of a {t} stage")
    return [x for d, x in zip(t.shape, dims) if d is None]


def reducer_identity(reducer, t):
    """The value a reduction starts from."""
    fl = T.is_float(t)
    if reducer == "sum":
        return 0.0 if fl else 0
    if reducer == "prod":
        return 1.0 if fl else 1
    if fl:
        return float("-inf") if reducer == "max" else float("inf")
    if t is T.i1:
        return reducer == "min"
    import numpy as np
    info = np.iinfo(T.to_numpy_dtype(t))
    return int(info.min) if reducer == "max" else int(info.max)


def reducer_identity_value(e: Emitter, compute, t):
    """The identity of `compute`'s reducer (built-in or a te.reducer) as a
    constant Value of type t."""
    r = compute.reducer_op()
    return e.const(r.identity_value() if r is not None else reducer_identity(compute.reducer, t), t)


def combine_values(e: Emitter, compute, acc, v):
    """Emit ``acc (reducer) v`` for `compute`'s reducer: a built-in one, or
    the body of its te.reducer cloned with (acc, v) for its arguments."""
    r = compute.reducer_op()
    if r is None:
        return combine(e, compute.reducer, acc, v)
    a, b = r.body.args
    mapping = {a: acc, b: v}
    from .ops import YieldOp
    for op in r.body.ops:
        if isinstance(op, YieldOp):
            break
        e.block.append(op.clone(mapping))
    y = r.body.last.operands[0]
    return mapping.get(y, y)


def combine(e: Emitter, reducer, acc, v):
    """Emit ``acc (reducer) v``."""
    kind = {"sum": "add", "prod": "mul", "max": "max", "min": "min"}[reducer]
    return e.binary(kind, acc, v)


class ScheduleBuilder:
    """Write schedule ops, TVM style: ``s.split(h, factor=8)`` appends
    ``te.split`` and returns the two new handles."""

    def __init__(self, e: Emitter):
        self.e = e

    def _op(self, name, operands, n_results=0, names=(), **attrs):
        from ...ir.registry import get_op_class
        from .schedule_ops import AXIS
        op = get_op_class(name)(list(operands), [AXIS] * n_results, attrs, (), self.e.loc)
        self.e.block.append(op)
        for r, nm in zip(op.results, names):
            r.name = nm
        return op.results

    def axes(self, stage):
        c = stage.defining_op()
        return list(self._op("te.axes", [stage], len(c.body.args), [a.name for a in c.body.args]))

    def split(self, h, factor=None, nparts=None):
        attrs = {"factor": factor} if factor is not None else {"nparts": nparts}
        return tuple(self._op("te.split", [h], 2, [f"{h.name}.outer", f"{h.name}.inner"], **attrs))

    def fuse(self, *hs):
        return self._op("te.fuse", hs, 1, [".".join(h.name for h in hs) + ".fused"])[0]

    def reorder(self, *hs):
        self._op("te.reorder", hs)

    def parallel(self, h):
        self._op("te.parallel", [h])

    def vectorize(self, h):
        self._op("te.vectorize", [h])

    def unroll(self, h):
        self._op("te.unroll", [h])

    def bind(self, h, thread):
        self._op("te.bind", [h], thread=thread)

    def compute_inline(self, stage):
        self._op("te.compute_inline", [stage])

    def compute_at(self, stage, h):
        self._op("te.compute_at", [stage, h])

    def prefetch(self, tensor, h, offset):
        self._op("te.prefetch", [tensor, h], offset=offset)

    # -- stage and storage ops (stage ops return the new stage, a tensor) --

    def _stage_op(self, name, operands, result_type, result_name, **attrs):
        from ...ir.registry import get_op_class
        op = get_op_class(name)(list(operands), [result_type], attrs, (), self.e.loc)
        self.e.block.append(op)
        op.results[0].name = result_name
        return op.results[0]

    def cache_read(self, tensor, readers, scope="shared"):
        return self._stage_op("te.cache_read", [tensor] + list(readers), tensor.type,
                              f"{tensor.name or 'in'}_{scope}", scope=scope)

    def cache_write(self, stage, scope="local"):
        return self._stage_op("te.cache_write", [stage], stage.type, f"{stage.name or 'out'}_{scope}", scope=scope)

    def rfactor(self, stage, h, factor_axis=0):
        """`h` is a reduce axis of `stage` (or one part of its split); the
        factored stage's type gets h's extent from the ops that made h."""
        from .schedule_ops import handle_extent
        t = stage.type
        shape = list(t.shape)
        shape.insert(factor_axis, handle_extent(h))
        return self._stage_op("te.rfactor", [stage, h], T.TensorType(shape, t.element_type),
                              f"{stage.name or 'red'}_rf", factor_axis=factor_axis)

    def set_scope(self, stage, scope):
        self._op("te.set_scope", [stage], scope=scope)

    def storage_align(self, stage, axis, factor, offset=0):
        self._op("te.storage_align", [stage], axis=axis, factor=factor, offset=offset)

    def double_buffer(self, stage):
        self._op("te.double_buffer", [stage])
