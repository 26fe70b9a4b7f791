"""Helpers shared by the relay operator families: axis normalisation,
attribute kinds TVM's ops need, dtype attributes, dynamic dimensions.

A dimension is an int or ``None`` (``?`` in text, Relay's ``Any``).  The
helpers keep a dimension static whenever the inputs determine it, and raise
``op.error(...)`` (a DiagnosticError at the op) on every user mistake.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import _knob_or
from ....ir.core import AttrKind


# -- attribute kinds ------------------------------------------------------------

def _int_or_ints(v):
    if type(v) is int:
        return None
    if isinstance(v, tuple) and all(type(x) is int for x in v):
        return None
    return "must be an integer or an array of integers"


def _listify(v):
    return tuple(v) if isinstance(v, list) else v


# `axis` of reductions and squeeze: unset (all axes), one axis, or a list
AXES = AttrKind("axes", lambda v: None if v is None else _int_or_ints(v), _listify)
INT_OR_INTS = AttrKind("integer or integer array", _knob_or(_int_or_ints), _listify)


def _pairs(v):
    if not isinstance(v, tuple) or not all(
            isinstance(p, tuple) and len(p) == 2 and all(type(x) is int for x in p) for p in v):
        return "must be an array of [before, after] integer pairs"
    return None


PAIRS = AttrKind("pad widths", _pairs,
                 lambda v: tuple(tuple(p) if isinstance(p, list) else p for p in v)
                 if isinstance(v, (list, tuple)) else v)


def _opt_ints(v):
    if not isinstance(v, tuple) or not all(x is None or type(x) is int for x in v):
        return "must be an array of integers"
    return None


def padding_kind(ndim):
    """TVM's conv/pool padding for `ndim` spatial axes, normalised to
    2*ndim values (all the befores, then all the afters): one value pads
    everything, `ndim` values pad both sides of each axis alike."""
    def check(v):
        if not isinstance(v, tuple) or not all(type(x) is int for x in v):
            return "must be an array of integers"
        if len(v) not in (1, ndim, 2 * ndim):
            return f"must have 1, {ndim} or {2 * ndim} elements, got {len(v)}"
        return None

    def coerce(v):
        if isinstance(v, int) and not isinstance(v, bool):
            v = (v,)
        if not isinstance(v, (list, tuple)):
            return v
        v = tuple(v)
        if len(v) == 1:
            return v * (2 * ndim)
        if len(v) == ndim and ndim != 2 * ndim:
            return v + v
        return v
    return AttrKind("padding", _knob_or(check), coerce)


def spatial_kind(ndim):
    """An int or an array of `ndim` ints (strides, dilation, pool_size); one
    int stands for all axes, as TVM's Python API allows."""
    def check(v):
        if not isinstance(v, tuple) or not all(type(x) is int for x in v):
            return "must be an array of integers"
        if len(v) != ndim:
            return f"must have {ndim} elements, got {len(v)}"
        return None

    def coerce(v):
        if type(v) is int:
            return (v,) * ndim
        if isinstance(v, (list, tuple)):
            v = tuple(v)
            return v * ndim if len(v) == 1 and ndim > 1 else v
        return v
    return AttrKind("integer array", _knob_or(check), coerce)


# -- axes -------------------------------------------------------------------------

def norm_axis(op, axis, rank, what="axis"):
    """`axis` in [-rank, rank) as a non-negative index."""
    if not -rank <= axis < rank:
        raise op.error(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank


def norm_axes(op, axes, rank, what="axis"):
    """A list of distinct non-negative axes, in the order given."""
    if isinstance(axes, int):
        axes = (axes,)
    out = []
    for a in axes:
        n = norm_axis(op, a, rank, what)
        if n in out:
            raise op.error(f"{what} {a} names axis {n} a second time in {list(axes)}")
        out.append(n)
    return out


def inverse_perm(perm):
    inv = [0] * len(perm)
    for new, old in enumerate(perm):
        inv[old] = new
    return inv


# -- dimensions ---------------------------------------------------------------------

def shape_text(s):
    return "[" + ", ".join("?" if d is None else str(d) for d in s) + "]"


def prod(dims):
    """Product of dimensions, None when any is dynamic."""
    n = 1
    for d in dims:
        if d is None:
            return None
        n *= d
    return n


def unify_dim(op, a, b, what):
    """The one size two dimensions must share; a dynamic one takes the other."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    raise op.error(f"{what}: {a} vs {b}")


def dims_match(a, b):
    return a is None or b is None or a == b


def ceil_div(a, b):
    return -(-a // b)


# -- operand checks -------------------------------------------------------------------

def tensor(op, t, what="operand"):
    if not isinstance(t, T.TensorType):
        raise op.error(f"expects a tensor {what}, got {t}")
    return t


def float_tensor(op, t, what="operand"):
    tensor(op, t, what)
    if not T.is_float(t.element_type):
        raise op.error(f"expects a floating-point {what}, got {t}")
    return t


def int_tensor(op, t, what="operand"):
    tensor(op, t, what)
    e = t.element_type
    if not isinstance(e, T.IntegerType) or e.width == 1:
        raise op.error(f"expects an integer {what}, got {t}")
    return t


def rank_is(op, t, rank, what="operand"):
    tensor(op, t, what)
    if t.rank != rank:
        raise op.error(f"expects a {rank}-d {what}, got {t}")
    return t


def scalar_like(op, t, what):
    """A one-element tensor (a scalar, or any shape of ones)."""
    tensor(op, t, what)
    if any(d is not None and d != 1 for d in t.shape):
        raise op.error(f"expects a single-element {what}, got {t}")
    return t


def dtype_attr(op, name="dtype", default=None):
    """The type a dtype-string attribute names; `default` when it is empty."""
    s = op.attributes.get(name, "")
    if not s:
        return default
    try:
        t = T.from_dtype_name(s)
    except (ValueError, T.TypeSyntaxError):
        t = None
    if t is None or not isinstance(t, (T.IntegerType, T.FloatType)):
        raise op.error(f"{name} \"{s}\" is not a scalar data type (e.g. float32, int64, bool)")
    return t


def result_dtype(op, index=0):
    """The numpy dtype of the op's (first) result, for compute()."""
    t = op.results[0].type
    if isinstance(t, T.TupleType):
        t = t.types[index]
    return t.dtype


def accumulation_dtype(dt):
    """The dtype a reference product accumulates in: float16 sums in float32
    and rounds once at the end (as hardware and onnxruntime do); others in
    their own dtype."""
    import numpy as np
    dt = np.dtype(dt)
    return np.dtype(np.float32) if dt == np.float16 else dt


def word_bytes(words):
    """The int8 bytes of an array of i32 words (packed weights for
    vpdpbusd: "NC{n}n4c", "OHWI{n}o4i"), a trailing axis of 4, byte 0 the
    lowest (little-endian)."""
    import numpy as np
    return np.ascontiguousarray(words, "<i4").view(np.int8).reshape(words.shape + (4,))


def bytes_as_words(b):
    """word_bytes' inverse: int8 with a trailing axis of 4 -> i32 words."""
    import numpy as np
    return np.ascontiguousarray(b, np.int8).view("<i4").reshape(b.shape[:-1]).astype(np.int32)


def word_halves(words):
    """The 16-bit halves (bf16 bits, uint16) of an array of i32 words (bf16
    weights packed for vdpbf16ps: "NC{n}n2c"), a trailing axis of 2, the
    low half first."""
    import numpy as np
    return np.ascontiguousarray(words, "<i4").view(np.uint16).reshape(words.shape + (2,))


def halves_as_words(h):
    """word_halves' inverse: uint16 with a trailing axis of 2 -> i32 words."""
    import numpy as np
    return np.ascontiguousarray(h, np.uint16).view("<i4").reshape(h.shape[:-1]).astype(np.int32)


def bf16_values(bits):
    """The f64 values of bf16 bits (uint16), as the runtime holds bf16, or
    of an ml_dtypes bfloat16 array (as the interpreters hold it)."""
    import numpy as np
    if getattr(bits, "dtype", None) is not None and bits.dtype.name == "bfloat16":
        return bits.astype(np.float64)
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)



def onnx_reshape(xs, shape, allowzero=False):
    """ONNX Reshape's target for an input of static shape `xs`: 0 copies
    the input's dimension (unless allowzero), -1 is inferred; the result
    as a tuple, or ValueError saying why it cannot be."""
    out, infer = [], None
    for i, d in enumerate(shape):
        if d == 0 and not allowzero:
            if i >= len(xs):
                raise ValueError(f"shape {list(shape)} copies dimension {i}, which the input does not have")
            d = xs[i]
        elif d == -1:
            if infer is not None:
                raise ValueError(f"shape {list(shape)} has more than one -1")
            infer = i
        elif d < 0:
            raise ValueError(f"shape {list(shape)} has a negative dimension")
        out.append(d)
    total = prod(xs)
    if infer is not None:
        known = prod(d for i, d in enumerate(out) if i != infer)
        if known == 0 or total % known:
            raise ValueError(f"cannot reshape {list(xs)} to {list(shape)}")
        out[infer] = total // known
    if prod(out) != total:
        raise ValueError(f"cannot reshape {list(xs)} ({total} elements) to {list(out)}")
    return tuple(out)
