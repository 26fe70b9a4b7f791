"""dft: ONNX's DFT (its complex numbers in a trailing axis of 2).

    %y = dft(%x) {axis = 1, length = 0, inverse = false, onesided = false}

x is (..., 1) real or (..., 2) complex (real, imaginary); `axis` is a
signal axis (not the last); `length` is the transform's size n (0: the
axis' size, or 2 * (size - 1) for the inverse one-sided transform); the
signal is cut or zero-padded to n along the axis.

    inverse  onesided  result along the axis                              last axis
    false    false     y[k] = sum_t x[t] e^(-2 pi i k t / n), n values       2
    false    true      the same for real x, its first n // 2 + 1 values      2
    true     false     x[t] = 1/n sum_k y[k] e^(2 pi i k t / n), n values    2
    true     true      the real signal of a one-sided spectrum, n values     1

No TE compute yet: it runs on numpy (np.fft; the build says so).  Pattern:
opaque.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import BOOL, INT
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from .base import OpPattern, RelayOp, tensor_type
from .util import norm_axis

np = lazy_module("numpy")


class DFTOp(RelayOp):
    __slots__ = ()
    name = "relay.dft"
    OPERANDS = ("data",)
    ATTRS = {"axis": Attr(INT, 1), "length": Attr(INT, 0), "inverse": Attr(BOOL, False),
             "onesided": Attr(BOOL, False)}
    PATTERN = OpPattern.OPAQUE

    def _setup(self, x):
        if x.rank < 2 or x.shape[-1] not in (1, 2) or not T.is_float(x.element_type):
            raise self.error(f"expects a float tensor whose last axis (real, imaginary) has 1 or 2 values, got {x}")
        axis = norm_axis(self, self.attributes["axis"], x.rank - 1, "axis (a signal axis)")
        size = x.shape[axis]
        inv, one = self.attributes["inverse"], self.attributes["onesided"]
        n = self.attributes["length"] or (None if size is None else (2 * (size - 1) if inv and one else size))
        if n is not None and n < 1:
            raise self.error(f"the transform's length must be positive, got {n}")
        if one and not inv and x.shape[-1] != 1:
            raise self.error("a one-sided forward DFT takes a real signal (last axis of 1)")
        return axis, n, inv, one

    def type_relation(self, x):
        tensor_type(self, x)
        axis, n, inv, one = self._setup(x)
        shape = list(x.shape)
        shape[axis] = n if not (one and not inv) or n is None else n // 2 + 1
        shape[-1] = 1 if inv and one else 2
        return x.with_shape(tuple(shape))

    def compute(self, x):
        axis, n, inv, one = self._setup(T.TensorType(x.shape, T.from_numpy_dtype(x.dtype)))
        # in the data's precision (numpy's FFT keeps float32 in single precision), as ONNX's reference
        ct = np.complex64 if x.dtype.itemsize <= 4 else np.complex128
        c = x[..., 0].astype(ct)
        if x.shape[-1] == 2:
            c = c + (1j * x[..., 1]).astype(ct)
        if inv and one:
            y = np.fft.irfft(c, n, axis=axis)[..., None]
        else:
            y = (np.fft.ifft if inv else np.fft.fft)(c, n, axis=axis)
            if one:
                y = np.take(y, np.arange(n // 2 + 1), axis=axis)
            y = np.stack([y.real, y.imag], axis=-1)
        return np.ascontiguousarray(y.astype(x.dtype))
