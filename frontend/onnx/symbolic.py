"""Shape tensors with dynamic entries, followed symbolically.

Exporters compute reshape targets from ``Shape``: ``x.view(x.size(0), -1,
12, 64)`` becomes Shape -> Gather -> Unsqueeze -> Concat -> Reshape.  With a
dynamic batch the target is not known at import time, but it is known to
be "x's dimension 0, then 12, 64": relay's reshape spells that ``[0, -1,
12, 64]``.  ``elements(v)`` follows a 1-d (or 0-d) integer tensor through
the relay ops such chains become (shape_of, take, concatenate,
strided_slice, reshape / squeeze / expand_dims, cast, constants, and
equal / where entry by entry) and gives its entries as ints or
``Dim(value, axis)``, two Dims equal when one origin up the graph makes
both (``_passes``: the K and V of one split, the logits and the ids);
anything else (arithmetic on a dynamic entry) is ``UNKNOWN``.
``reshape_codes`` turns such a target into relay's reshape codes when it
can; ``shaped_like`` makes a value of
such a shape (ConstantOfShape and Expand of a shape computed at run time:
full_like and broadcast_to_like of it, compiled, where numpy would size
them per call).
"""

from __future__ import annotations


class Dim:
    """Dimension `axis` of relay value `value`.  Two Dims are equal when
    they are known to be the same size at run time: they share an origin
    (_origins), as the K and V one split makes share their sequence axis,
    or a residual stream and the token ids it was embedded from."""

    __slots__ = ("value", "axis", "memo")

    def __init__(self, value, axis, cx):
        self.value, self.axis = value, axis
        self.memo = cx.__dict__.setdefault("_dim_origins", {})   # one import's: (id, axis) -> origins

    def __eq__(self, other):
        if not isinstance(other, Dim):
            return False
        if other.value is self.value and other.axis == self.axis:
            return True
        return not _origins(self.value, self.axis, self.memo).isdisjoint(_origins(other.value, other.axis,
                                                                                  self.memo))

    def __hash__(self):
        return 0   # equality is shared origins, not identity


def _origins(value, axis, memo, limit=4096):
    """The (value id, axis) pairs up the graph whose '?' dimension is this
    one (_passes, followed through every operand), itself included."""
    key = (id(value), axis)
    if key in memo and memo[key][0] is value:
        return memo[key][1]
    seen, stack, keep = {key}, [(value, axis)], [value]
    while stack and len(seen) < limit:
        v, a = stack.pop()
        op = v.defining_op()
        for x, b in (_passes(op, v, a) if op is not None else ()):
            k = (id(x), b)
            if k not in seen:
                seen.add(k)
                keep.append(x)
                stack.append((x, b))
    out = frozenset(seen)
    memo[key] = (value, out, keep)   # (holding the values keeps their ids theirs)
    return out


# ops whose result has their first operand's shape (besides elementwise ones)
_SAME_SHAPE = {"nn.layer_norm", "nn.group_norm", "nn.instance_norm", "nn.softmax", "nn.log_softmax",
               "nn.bias_add", "nn.prelu", "nn.dropout", "nn.fast_softmax", "qnn.quantize", "qnn.dequantize",
               "qnn.requantize"}
# besides the binary ops (BinaryBroadcastOp), ops that broadcast their operands as numpy does
_NUMPY_BROADCAST = {"where", "broadcast_to_like"}


def _passes(op, value, axis):
    """The (operand, axis) pairs whose '?' dimension `op`'s result `value`
    has at `axis`.  Elementwise ops and the like: the first operand;
    numpy-broadcasting ops: each operand whose dimension there is '?'
    (compiled code checks that the '?' sizes meeting in a broadcast are
    equal, and a call where they differ fails, never computes with the
    wrong size); a split's pieces along another
    axis; a transpose; take's indices; a dense or matmul's rows; a batched
    product's batch, rows and columns; squeeze's and expand_dims' axes;
    a reshape's 0 code, or its one '?' in and out with the same static
    product."""
    from ...dialects.relay.ops.base import OpPattern
    from ...dialects.relay.ops.elemwise import BinaryBroadcastOp
    name = op.name[len("relay."):] if op.name.startswith("relay.") else op.name
    ins = [x for x in op.operands if getattr(x.type, "shape", None) is not None]
    rank = value.type.rank
    if name == "get_item":
        split = op.operands[0].defining_op()
        if split is not None and split.name == "relay.split" and \
                axis != split.attributes["axis"] % split.operands[0].type.rank:
            return [(split.operands[0], axis)]
        return []
    same = name in _SAME_SHAPE or getattr(op, "PATTERN", None) == OpPattern.ELEMWISE
    if same or isinstance(op, BinaryBroadcastOp) or name in _NUMPY_BROADCAST:
        if len(op.results) != 1 or not ins:
            return []
        out = []
        for x in (ins[:1] if same else ins):
            a = axis - (rank - x.type.rank)
            if a >= 0 and x.type.shape[a] is None:
                out.append((x, a))
        return out
    if name == "transpose":
        return [(op.operands[0], op.perm(rank)[axis])]
    if name == "take" and op.attributes.get("axis") is not None and not op.attributes.get("batch_dims"):
        a, k = op.attributes["axis"] % op.operands[0].type.rank, op.operands[1].type.rank
        if axis < a:
            return [(op.operands[0], axis)]
        return [(op.operands[1], axis - a)] if axis < a + k else [(op.operands[0], axis - k + 1)]
    if name in ("nn.dense", "nn.contrib_dense_pack", "nn.matmul") and axis < rank - 1 and \
            not op.attributes.get("transpose_a"):
        return [(op.operands[0], axis)]
    if name == "nn.batch_matmul" and rank == 3:
        a, b = op.operands
        ta, tb = op.attributes.get("transpose_a", False), op.attributes.get("transpose_b", True)
        src = {0: [(a, 0), (b, 0)], 1: [(a, 2 if ta else 1)], 2: [(b, 1 if tb else 2)]}[axis]
        return [(x, k) for x, k in src if x.type.shape[k] is None]
    if name == "squeeze":
        x = op.operands[0]
        kept = [k for k in range(x.type.rank) if k not in op.dropped(x.type.shape)]
        return [(x, kept[axis])] if len(kept) == rank else []
    if name == "expand_dims":
        a, k = op.attributes["axis"], op.attributes.get("num_newaxis", 1)
        a = a if a >= 0 else a + rank
        return [] if a <= axis < a + k else [(op.operands[0], axis if axis < a else axis - k)]
    if name == "reshape":
        x = op.operands[0]
        codes = list(op.attributes["newshape"])
        if len(codes) == rank and axis < x.type.rank and codes[axis] == 0 and all(c >= -1 for c in codes):
            return [(x, axis)]   # 0 copies the input's dimension at that place
        qin = [a for a, d in enumerate(x.type.shape) if d is None]
        qout = [a for a, d in enumerate(value.type.shape) if d is None]
        if len(qin) == 1 and qout == [axis] and _static_product(x.type.shape) == _static_product(value.type.shape):
            return [(x, qin[0])]
    return []


def _static_product(shape):
    from ...dialects.relay.ops.util import prod
    return prod(d for d in shape if d is not None)


UNKNOWN = object()
MAX_ELEMENTS = 16      # shape tensors are short; longer ones are not followed


def elements(cx, v, depth=0):
    """The entries of integer tensor `v` (ints, Dims, UNKNOWN), or None."""
    arr = cx.static(v, bound=False)
    if arr is not None:
        return [int(x) for x in arr.reshape(-1)] if arr.size <= MAX_ELEMENTS else None
    op = v.defining_op()
    if op is None or depth > 64:
        return None
    name = op.name[len("relay."):]
    ins = op.operands
    if name == "shape_of":
        return [d if d is not None else Dim(ins[0], i, cx) for i, d in enumerate(ins[0].type.shape)]
    if name in ("cast", "reshape", "squeeze", "expand_dims", "copy"):
        return elements(cx, ins[0], depth + 1)
    if name == "concatenate":
        out = []
        for x in ins:
            e = elements(cx, x, depth + 1)
            if e is None:
                return None
            out += e
        return out
    if name == "take" and op.attributes.get("axis") in (0, None):
        data = elements(cx, ins[0], depth + 1)
        idx = cx.static(ins[1], bound=False)
        if data is None or idx is None:
            return None
        try:
            return [data[int(i)] for i in idx.reshape(-1)]
        except IndexError:
            return None
    if name == "strided_slice":
        data = elements(cx, ins[0], depth + 1)
        a = op.attributes
        if data is None or a.get("axes") not in (None, (0,)) or a.get("slice_mode", "end") != "end":
            return None
        strides = a.get("strides") or (1,)
        return data[slice(a["begin"][0], a["end"][0] if a["end"] else None, strides[0])]
    if name in ("equal", "not_equal", "where"):
        # entry by entry: a dimension is never negative (the -1 tests of
        # "where(shape == -1, 1, shape)"), and a known condition picks
        parts = [elements(cx, x, depth + 1) for x in ins]
        n = max((len(e) for e in parts if e is not None), default=0)
        if all(e is not None and len(e) in (1, n) for e in parts):
            parts = [e * n if len(e) == 1 else e for e in parts]
            if name == "where":
                return [UNKNOWN if c is UNKNOWN or isinstance(c, Dim) else a if c else b for c, a, b in zip(*parts)]
            same = [_same_entry(a, b) for a, b in zip(*parts)]
            return [s if s is UNKNOWN else int(s == (name == "equal")) for s in same]
    # arithmetic on entries (batch * seq): values unknown, the count known
    shape = getattr(op.results[0].type, "shape", None) if len(op.results) == 1 else None
    if shape is not None and len(shape) <= 1 and None not in shape:
        return [UNKNOWN] * (shape[0] if shape else 1)
    return None


def _same_entry(a, b):
    """Whether two entries are equal: True, False or UNKNOWN."""
    if a is UNKNOWN or b is UNKNOWN:
        return UNKNOWN
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, Dim) and isinstance(b, Dim):
        return True if a == b else UNKNOWN
    return False if min(x for x in (a, b) if isinstance(x, int)) < 0 else UNKNOWN


def shaped_like(cx, entries):
    """A relay value of shape `entries` (ints and Dims; what it holds is
    not meant to be read), for full_like and broadcast_to_like: the Dims'
    tensor itself when the entries are its dimensions in order, else the
    broadcast sum of an arange_like per Dim at its place and zeros of the
    static sizes (an elementwise kernel then reads only the sizes).  None
    when an entry is unknown or negative."""
    import numpy as np
    if any(e is UNKNOWN or isinstance(e, int) and e < 0 for e in entries):
        return None
    r = len(entries)
    dims = [e for e in entries if isinstance(e, Dim)]
    if dims:
        x = dims[0].value
        if x.type.rank == r and all(e == Dim(x, i, cx) if isinstance(e, Dim) else x.type.shape[i] == e
                                    for i, e in enumerate(entries)):
            return x
    static = [e if isinstance(e, int) else 1 for e in entries]
    out = cx.const(np.zeros(static, np.int32)) if not dims or any(s != 1 for s in static) else None
    for p, e in enumerate(entries):
        if isinstance(e, Dim):
            piece = cx.op("reshape", cx.op("arange_like", e.value, axis=e.axis, dtype="int32"),
                          newshape=[1] * p + [-1] + [1] * (r - p - 1))
            out = piece if out is None else cx.op("add", out, piece)
    return out


def reshape_codes(cx, x, target):
    """relay reshape codes for `target` entries (from elements()) applied to
    `x`: a static entry as it is (ONNX's 0 "copy" and -1 "infer" mean what
    relay's do), x's own dimension at the same place as 0, and one other
    entry as -1; None when that leaves more than one to infer."""
    codes, infer = [], 0
    for i, e in enumerate(target):
        if isinstance(e, Dim) and i < x.type.rank and x.type.shape[i] is None and e == Dim(x, i, cx):
            codes.append(0)
        elif isinstance(e, int) and e != -1:
            codes.append(e)
        else:
            infer += 1
            codes.append(-1)
    return tuple(codes) if infer <= 1 else None
