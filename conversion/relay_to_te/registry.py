"""The registry of TE computes for relay operators, and the helpers the
compute modules share.

A compute is ``fn(e, op, args) -> tensor`` (or a tuple of tensors for a
tuple-typed result): it appends the te.compute(s) for one relay op to the
te.func body the emitter `e` writes into.  `args` are te tensor Values, or
:class:`Scalar` for a splat relay.constant (read as an arith.constant in
the body).

Registration.  Each ``topi_*`` module registers its own computes with the
:func:`strategy` decorator, keyed by the relay op's name as TVM spells it
(``nn.conv2d``).  A name is registered once: a second module registering
the same name is an error, so no module replaces another's entry and the
table does not depend on the order in which modules are imported.

Loading.  This module imports no compute module at import time (they
import it, for the decorator and the helpers).  :func:`computes` imports
every module of :data:`COMPUTE_MODULES` once, on first use, and returns
the complete table; :func:`lookup` reads it.  ``strategies.py`` is the
same table as a module attribute (``strategies.STRATEGIES``).

    topi_elemwise    elementwise and broadcasting ops, nn.bias_add, prelu, where, ...
    topi_reduce      sum, max, argmax, variance, ...
    topi_nn          nn.dense, nn.conv*, matmuls, softmax, norms, nn.pad, ...
    topi_pool        window, global and adaptive pools
    topi_image       resizes and upsampling
    topi_transform   layout_transform, reshape, transpose, concatenate, ...
    topi_tensor      constant fills, take, gather, scatter, sort, topk, cumsum, ...
    topi_qnn         qnn.* and annotation.simulated_quantize
    topi_attention   nn.attention (scores recomputed per pass, never stored)
"""

from __future__ import annotations

import importlib

from ...dialects.te.builder import compute
from ...ir import types as T

# every module that registers computes (relative to this package)
COMPUTE_MODULES = ("topi_elemwise", "topi_reduce", "topi_nn", "topi_pool", "topi_image",
                   "topi_transform", "topi_tensor", "topi_qnn", "topi_attention")

_TABLE: dict = {}
_loaded = False


def strategy(*names):
    """Register the decorated function as the TE compute of the relay ops
    `names` (``"nn.conv2d"``).  Registering a name twice is an error
    (re-running the same definition, as importlib.reload does, is not)."""
    def reg(fn):
        for n in names:
            old = _TABLE.get(n)
            if old is not None and (old.__module__, old.__qualname__) != (fn.__module__, fn.__qualname__):
                raise ValueError(f"TE compute for '{n}' registered twice: "
                                 f"{old.__module__}.{old.__qualname__} and {fn.__module__}.{fn.__qualname__}")
            _TABLE[n] = fn
        return fn
    return reg


def computes() -> dict:
    """The complete table, relay op name -> compute (every compute module
    imported)."""
    global _loaded
    if not _loaded:
        for m in COMPUTE_MODULES:
            importlib.import_module(f"{__package__}.{m}")
        _loaded = True
    return _TABLE


def lookup(name):
    """The compute registered for relay op `name`, or None."""
    return computes().get(name)


# -- operands and results -------------------------------------------------------------------

class Scalar:
    """A splat constant operand: every element is `value`."""

    __slots__ = ("value", "type")

    def __init__(self, value, type):
        self.value = value
        self.type = type


def load(e, arg, out_idx):
    """Read `arg` at the output index, numpy-broadcast: a size-1 dimension
    reads index 0 where the output's dimension is larger."""
    if isinstance(arg, Scalar):
        return e.const(arg.value, arg.type.element_type)
    shape = arg.type.shape
    out_shape = out_idx[0].block.parent_op.tensor_type.shape if out_idx else ()
    off = len(out_idx) - len(shape)
    return e.read(arg, [0 if n == 1 and out_shape[off + d] != 1 else out_idx[off + d]
                        for d, n in enumerate(shape)])


def out_type(op):
    """The op's tensor result type; its '?' dimensions are sized by the
    emitter's ``result_dims`` (dims.py) when its te.compute is built."""
    t = op.results[0].type
    if not isinstance(t, T.TensorType):
        raise op.error(f"te lowering needs a tensor result, got {t}")
    return t


def sizes_without(e, axes):
    """The size Values of a stage that drops `axes` of the result being
    lowered (a reduction along them): its '?' dims, in order."""
    from ...ir.core import Value
    dims = e.result_dims or ()
    return [d for a, d in enumerate(dims) if a not in axes and isinstance(d, Value)]


def operand_dims(e, k, arg):
    """Dims of operand k (`arg`): ints, and index Values for its '?'
    dimensions while a dynamic function lowers (dims.py)."""
    if e.operand_dims is not None:
        return tuple(e.operand_dims[k])
    return tuple(arg.type.shape)


def static_first(*dims):
    """Of dims that must be equal, a static one where there is one."""
    return next((d for d in dims if type(d) is int), dims[0])


def stage_name(op, default):
    n = op.results[0].name
    return n if n and not n[0].isdigit() else default


def axis_names(rank):
    return [f"ax{d}" for d in range(rank)]


def as_tensor(e, arg, what):
    """`arg` as a tensor: a splat constant (fuse-ops clones one-element
    constants into kernels) becomes a stage that fills it, which the
    default schedule inlines."""
    if isinstance(arg, Scalar):
        et = arg.type.element_type
        return compute(e, arg.type, lambda e, *idx: e.const(arg.value, et),
                       names=axis_names(arg.type.rank), name=f"{what}_splat")
    return arg


# -- layouts (nn, pool, image) ------------------------------------------------------------------

def primal_index(e, layout, idx):
    """Axis letter -> primal index of an index in `layout` (a blocked axis
    C with sub-axis c of factor f: C * f + c)."""
    out = {}
    for ax in layout.primal:
        v = idx[layout.index(ax)]
        f = layout.factors.get(ax.lower())
        out[ax] = e.add(e.mul(v, f), idx[layout.index(ax.lower())]) if f else v
    return out


def layout_index(e, layout, pos):
    """The index in `layout` of the primal position `pos` (letter -> index)."""
    out = []
    for ax in layout.axes:
        if ax.isupper():
            f = layout.factors.get(ax.lower())
            out.append(e.floordiv(pos[ax], f) if f else pos[ax])
        else:
            out.append(e.floormod(pos[ax.upper()], layout.factors[ax]))
    return out


def read_primal(e, x, layout, pos, guard=True, else_value=0.0):
    return e.read(x, layout_index(e, layout, pos), guard=guard, else_value=else_value)


def layout_names(layout):
    return [ax.lower() if ax.isupper() else f"{ax}{layout.factors[ax]}" for ax in layout.axes]


def in_range(e, v, lo, hi):
    """The conditions lo <= v < hi (folded away where known)."""
    return [e.cmp("ge", v, lo), e.cmp("lt", v, hi)]


def to_float(e, i, ft=T.f64):
    """An index as a float."""
    if isinstance(i, int):
        return e.const(float(i), ft)
    return e.cast(e.cast(i, T.i64), ft)


def to_index(e, v):
    """A float (already integral) as an index."""
    return e.cast(e.cast(v, T.i64), T.index)


def fconst(e, v, ft):
    return e.const(float(v), ft)


# -- linear positions (transform, tensor) --------------------------------------------------------

def ravel(e, idx, shape):
    """The row-major linear position of `idx` in `shape`."""
    lin = 0
    for i, n in zip(idx, shape):
        lin = e.add(e.mul(lin, n), i)
    return lin


def unravel(e, lin, shape):
    """The inverse of :func:`ravel`; a size-1 dimension is index 0, and the
    leading dimension needs no modulo (lin < prod(shape))."""
    out, stride = [], 1
    for d in reversed(range(len(shape))):
        n = shape[d]
        q = e.floordiv(lin, stride)
        out.append(0 if n == 1 else q if d == 0 else e.floormod(q, n))
        stride = e.mul(stride, n)   # an index Value past a '?' dimension
    return out[::-1]


def as_index(e, v):
    """An element value (any integer type) as an index."""
    if v.type is T.i1:
        v = e.op("arith.extui", [v], [T.i32])
    return e.cast(v, T.index)
