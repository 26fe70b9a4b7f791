"""The te.realize of a stage: its memory scope, padding and double buffering.

storage_align ``{axis = a, factor = f, offset = o}`` (TVM's): the stride of
dimension a, ``prod(shape[a+1:])``, becomes o modulo f by growing
dimension a+1 (the row) to the smallest length that makes it so; the
stage still writes and its readers still read the unpadded region, so only
the buffer's shape changes::

    te.storage_align %S {axis = 0, factor = 8, offset = 1}   on tensor<16x16xf32>
    => %S = te.realize : tensor<16x17xf32>          (row stride 17 = 1 mod 8)
"""

from __future__ import annotations

import math

from ...ir import types as T
from ...ir.attributes import UNIT


def padded_shape(st, shape):
    shape = list(shape)
    if st.align is None:
        return shape
    if None in shape:
        raise st.storage_ops[-1].error(f"cannot pad '{st.name}': it has a dynamic shape")
    a, f, o = st.align
    inner = 1
    for n in shape[a + 2:]:
        inner *= n
    # row * inner = o (mod f): with g = gcd(inner, f), solvable when g | o,
    # and then row = (o / g) * (inner / g)^-1 modulo f / g (no search: the
    # factor may be 2^32)
    g = math.gcd(inner, f)
    if o % g == 0:
        step = f // g
        first = (o // g) * pow(inner // g, -1, step) % step if step > 1 else 0
        start = shape[a + 1]
        shape[a + 1] = start + (first - start) % step
        return shape
    op = st.storage_ops[-1]
    raise op.error(f"no row length makes the stride of dimension {a} equal {o} modulo {f} "
                   f"(the rows below it hold {inner} element(s) each)")


def realize_for(st, t, loc, output=False, sizes=()):
    """A te.realize for stage `st` holding a tensor of type `t` (`sizes`:
    its '?' dimensions)."""
    from ...dialects.te.ops import RealizeOp
    attrs = {}
    if not output:
        if st.scope is not None and st.scope != "global":
            attrs["scope"] = st.scope
        if st.double_buffer:
            attrs["double_buffer"] = UNIT
        t = T.TensorType(padded_shape(st, t.shape), t.element_type)
    return RealizeOp(list(sizes), [t], attrs, (), loc)
