"""Shape tensors with dynamic entries, followed symbolically.

Exporters compute reshape targets from ``Shape``: ``x.view(x.size(0), -1,
12, 64)`` becomes Shape -> Gather -> Unsqueeze -> Concat -> Reshape.  With a
dynamic batch the target is not known at import time, but it is known to
be "x's dimension 0, then 12, 64": relay's reshape spells that ``[0, -1,
12, 64]``.  ``elements(v)`` follows a 1-d (or 0-d) integer tensor through
the relay ops such chains become (shape_of, take, concatenate,
strided_slice, reshape / squeeze / expand_dims, cast, constants) and gives
its entries as ints or ``Dim(value, axis)``; anything else (arithmetic on
a dynamic entry) is ``UNKNOWN``.  ``reshape_codes`` turns such a target
into relay's reshape codes when it can.
"""

from __future__ import annotations


class Dim:
    """Dimension `axis` of relay value `value`."""

    __slots__ = ("value", "axis")

    def __init__(self, value, axis):
        self.value, self.axis = value, axis

    def __eq__(self, other):
        return isinstance(other, Dim) and other.value is self.value and other.axis == self.axis

    def __hash__(self):
        return hash((id(self.value), self.axis))


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
        return [d if d is not None else Dim(ins[0], i) for i, d in enumerate(ins[0].type.shape)]
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
    # arithmetic on entries (batch * seq): values unknown, the count known
    shape = getattr(op.results[0].type, "shape", None) if len(op.results) == 1 else None
    if shape is not None and len(shape) <= 1 and None not in shape:
        return [UNKNOWN] * (shape[0] if shape else 1)
    return None


def reshape_codes(cx, x, target):
    """relay reshape codes for `target` entries (from elements()) applied to
    `x`: a static entry as it is (ONNX's 0 "copy" and -1 "infer" mean what
    relay's do), x's own dimension at the same place as 0, and one other
    entry as -1; None when that leaves more than one to infer."""
    codes, infer = [], 0
    for i, e in enumerate(target):
        if isinstance(e, Dim) and e.value is x and e.axis == i:
            codes.append(0)
        elif isinstance(e, int) and e != -1:
            codes.append(e)
        else:
            infer += 1
            codes.append(-1)
    return tuple(codes) if infer <= 1 else None
