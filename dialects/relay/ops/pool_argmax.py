"""nn.max_pool_argmax: where each max pooling window's maximum is (ONNX
MaxPool's Indices output).

    %i = nn.max_pool_argmax(%x) {pool_size = [2, 2], strides = [2, 2], padding = [0, 0, 0, 0],
                                 dilation = [1, 1], storage_order = 0}

x is (N, C, d1..dr); the result (N, C, o1..or) int64, the output sizes of
the max pool with the same attributes (floor; padding: all begins, then all
ends).  Each index counts in the whole input: (n * C + c) * prod(d) plus the
position in the plane, row-major (storage_order 0) or column-major (1).
Padding is never chosen; among equal maxima the first in row-major order
wins.  It runs on numpy (no TE compute yet).  Pattern: opaque.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import INT, ints
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from .base import OpPattern, RelayOp, tensor_type

np = lazy_module("numpy")


class MaxPoolArgmaxOp(RelayOp):
    __slots__ = ()
    name = "relay.nn.max_pool_argmax"
    OPERANDS = ("data",)
    ATTRS = {"pool_size": Attr(ints()), "strides": Attr(ints(), ()), "padding": Attr(ints(), ()),
             "dilation": Attr(ints(), ()), "storage_order": Attr(INT, 0)}
    PATTERN = OpPattern.OPAQUE

    def geometry(self, shape):
        a = self.attributes
        r = len(shape) - 2
        k = list(a["pool_size"])
        s = list(a["strides"]) or [1] * r
        p = list(a["padding"]) or [0] * (2 * r)
        d = list(a["dilation"]) or [1] * r
        if r < 1 or len(k) != r or len(s) != r or len(d) != r or len(p) != 2 * r:
            raise self.error(f"pool_size, strides, dilation need {r} values and padding {2 * r}")
        if a["storage_order"] not in (0, 1):
            raise self.error(f"storage_order is 0 or 1, got {a['storage_order']}")
        out = []
        for i in range(r):
            L = shape[2 + i]
            out.append(None if L is None else (L + p[i] + p[i + r] - d[i] * (k[i] - 1) - 1) // s[i] + 1)
            if out[-1] is not None and out[-1] < 1:
                raise self.error(f"the window does not fit axis {2 + i} of size {L}")
        return k, s, p, d, out

    def type_relation(self, x):
        tensor_type(self, x)
        *_, out = self.geometry(x.shape)
        return T.TensorType(tuple(x.shape[:2]) + tuple(out), T.i64)

    def compute(self, x):
        k, s, p, d, out = self.geometry(x.shape)
        r = x.ndim - 2
        dims = x.shape[2:]
        best = np.full(x.shape[:2] + tuple(out), -np.inf)
        where = np.zeros(x.shape[:2] + tuple(out) + (r,), dtype=np.int64)
        grids = np.meshgrid(*[np.arange(o) for o in out], indexing="ij")
        for off in np.ndindex(*k):   # row-major over the window: the first maximum stays
            pos = [grids[i] * s[i] - p[i] + off[i] * d[i] for i in range(r)]
            inside = np.ones(grids[0].shape, dtype=bool)
            for i in range(r):
                inside &= (pos[i] >= 0) & (pos[i] < dims[i])
            clipped = tuple(np.clip(pos[i], 0, dims[i] - 1) for i in range(r))
            vals = x[(slice(None), slice(None)) + clipped].astype(np.float64)
            better = inside & (vals > best)
            best = np.where(better, vals, best)
            for i in range(r):
                where[..., i] = np.where(better, pos[i], where[..., i])
        plane = int(np.prod(dims))
        if self.attributes["storage_order"]:
            strides = [int(np.prod(dims[:i])) for i in range(r)]          # column-major
        else:
            strides = [int(np.prod(dims[i + 1:])) for i in range(r)]      # row-major
        flat = sum(where[..., i] * strides[i] for i in range(r))
        nc = np.arange(x.shape[0] * x.shape[1]).reshape(x.shape[:2] + (1,) * r)
        return (nc * plane + flat).astype(np.int64)
