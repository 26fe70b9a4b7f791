"""det and col2im (ONNX Det and Col2Im).

    %d = det(%x)                       x (..., n, n) -> (...): each matrix's determinant
    %i = col2im(%cols) {image_shape = [5, 5], block_shape = [2, 2], strides = [1, 1],
                        pads = [0, 0, 0, 0], dilations = [1, 1]}
                                       cols (N, C * prod(block), L) -> (N, C, *image):
                                       the blocks added back where they were taken
                                       (torch's fold, N-d); pads: all begins, then all ends

Neither has a TE compute yet: they run on numpy (the build says so).
Pattern: opaque.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import ints
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from .base import OpPattern, RelayOp, tensor_type

np = lazy_module("numpy")


class DetOp(RelayOp):
    __slots__ = ()
    name = "relay.det"
    OPERANDS = ("data",)
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x):
        tensor_type(self, x)
        if x.rank < 2 or (None not in x.shape[-2:] and x.shape[-1] != x.shape[-2]) or not T.is_float(x.element_type):
            raise self.error(f"expects float square matrices (..., n, n), got {x}")
        return x.with_shape(x.shape[:-2])

    def compute(self, x):
        return np.asarray(np.linalg.det(x.astype(np.float64)), dtype=x.dtype)


class Col2ImOp(RelayOp):
    __slots__ = ()
    name = "relay.col2im"
    OPERANDS = ("data",)
    ATTRS = {"image_shape": Attr(ints()), "block_shape": Attr(ints()), "strides": Attr(ints(), ()),
             "pads": Attr(ints(), ()), "dilations": Attr(ints(), ())}
    PATTERN = OpPattern.OPAQUE

    def geometry(self):
        a = self.attributes
        image, block = list(a["image_shape"]), list(a["block_shape"])
        r = len(image)
        strides = list(a["strides"]) or [1] * r
        pads = list(a["pads"]) or [0] * (2 * r)
        dil = list(a["dilations"]) or [1] * r
        if len(block) != r or len(strides) != r or len(dil) != r or len(pads) != 2 * r or r < 1:
            raise self.error(f"image_shape, block_shape, strides, dilations need one value per spatial axis "
                             f"and pads two ({r} axes)")
        counts = []
        for i in range(r):
            span = image[i] + pads[i] + pads[i + r] - dil[i] * (block[i] - 1) - 1
            if span < 0 or strides[i] < 1:
                raise self.error(f"blocks of {block[i]} (dilation {dil[i]}) do not fit axis {i} of size "
                                 f"{image[i]} padded by {pads[i]}, {pads[i + r]}")
            counts.append(span // strides[i] + 1)
        return image, block, strides, pads, dil, counts

    def type_relation(self, x):
        tensor_type(self, x)
        image, block, _, _, _, counts = self.geometry()
        kb = int(np.prod(block))
        if x.rank != 3 or (x.shape[1] is not None and x.shape[1] % kb) or \
                (x.shape[2] is not None and x.shape[2] != int(np.prod(counts))):
            raise self.error(f"expects (N, C * {kb}, {int(np.prod(counts))}) columns for these blocks, got {x}")
        c = None if x.shape[1] is None else x.shape[1] // kb
        return x.with_shape((x.shape[0], c) + tuple(image))

    def compute(self, x):
        image, block, strides, pads, dil, counts = self.geometry()
        r = len(image)
        n, ck, _ = x.shape
        c = ck // int(np.prod(block))
        cols = x.reshape((n, c) + tuple(block) + tuple(counts))
        padded = np.zeros((n, c) + tuple(image[i] + pads[i] + pads[i + r] for i in range(r)), dtype=np.float64)
        for off in np.ndindex(*block):
            # block element `off` of every block lands at start + off * dilation
            dst = tuple(slice(off[i] * dil[i], off[i] * dil[i] + strides[i] * (counts[i] - 1) + 1, strides[i])
                        for i in range(r))
            padded[(slice(None), slice(None)) + dst] += cols[(slice(None), slice(None)) + off]
        crop = tuple(slice(pads[i], pads[i] + image[i]) for i in range(r))
        return np.ascontiguousarray(padded[(slice(None), slice(None)) + crop].astype(x.dtype))
