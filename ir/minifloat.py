"""The 8- and 4-bit float formats: MLIR's names, ONNX's FLOAT8 / FLOAT4 types, ml_dtypes' dtypes.

======================  ====  ====  ====  =========================================
type                    exp   man   bias  specials
======================  ====  ====  ====  =========================================
``f8E4M3FN``            4     3     7     NaN S.1111.111; no inf; max 448
``f8E4M3FNUZ``          4     3     8     NaN 0x80 only; no inf, no -0; max 240
``f8E5M2``              5     2     15    IEEE: inf S.11111.00, NaN S.11111.xx; max 57344
``f8E5M2FNUZ``          5     2     16    NaN 0x80 only; no inf, no -0; max 57344
``f4E2M1FN``            2     1     1     no NaN, no inf; max 6 (4 bits, in the low
                                          bits of a byte, as ml_dtypes holds it)
======================  ====  ====  ====  =========================================

Values are stored as one byte (tir and LLVM hold them as ``i8``) and
computed in f32: a cast *to* a format rounds to nearest even, and a value
beyond the largest finite one becomes inf (E5M2) or NaN (the others), as
MLIR's APFloat, ml_dtypes and ONNX's ``Cast(saturate=0)`` do; ONNX's
default ``saturate=1`` clamps to the largest finite value first (its
frontend's job).  f4E2M1FN has neither: beyond its range a value (inf
too) saturates to +-6, and NaN becomes 0.  The numpy dtypes are ml_dtypes', the ones ONNX's own
tensors use.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Format:
    kind: str            # the tvmd / MLIR type name
    ebits: int
    mbits: int
    bias: int
    specials: str        # "ieee", "fn" (only S.1..1 is NaN), "fnuz" (0x80 is NaN) or "none" (no NaN, no inf)
    numpy_name: str      # ml_dtypes' dtype

    @property
    def max_code(self) -> int:
        """The bits of the largest finite value."""
        top = (1 << self.ebits) - 1
        if self.specials == "ieee":
            return ((top - 1) << self.mbits) | ((1 << self.mbits) - 1)
        if self.specials == "fn":
            return (top << self.mbits) | ((1 << self.mbits) - 2)
        if self.specials == "none":
            return (top << self.mbits) | ((1 << self.mbits) - 1)
        return 0x7F

    @property
    def overflow_code(self) -> int:
        """What a magnitude past the largest finite value becomes (sign apart)."""
        if self.specials == "ieee":
            return ((1 << self.ebits) - 1) << self.mbits       # inf
        if self.specials == "none":
            return self.max_code                                # saturates
        return 0x7F if self.specials == "fn" else 0x80

    @property
    def nan_code(self) -> int:
        if self.specials == "ieee":
            return (((1 << self.ebits) - 1) << self.mbits) | (1 << (self.mbits - 1))   # quiet NaN
        if self.specials == "none":
            return 0                                            # no NaN: zero
        return 0x7F if self.specials == "fn" else 0x80

    @property
    def max_value(self) -> float:
        e = (self.max_code >> self.mbits) - self.bias
        return (1 + (self.max_code & ((1 << self.mbits) - 1)) / (1 << self.mbits)) * 2.0 ** e

    @property
    def sign_bit(self) -> int:
        return self.ebits + self.mbits

    @property
    def min_normal_exponent(self) -> int:
        return 1 - self.bias

    def numpy_dtype(self):
        import ml_dtypes
        import numpy as np
        return np.dtype(getattr(ml_dtypes, self.numpy_name))


FORMATS = {f.kind: f for f in (
    Format("f8E4M3FN", 4, 3, 7, "fn", "float8_e4m3fn"),
    Format("f8E4M3FNUZ", 4, 3, 8, "fnuz", "float8_e4m3fnuz"),
    Format("f8E5M2", 5, 2, 15, "ieee", "float8_e5m2"),
    Format("f8E5M2FNUZ", 5, 2, 16, "fnuz", "float8_e5m2fnuz"),
    Format("f4E2M1FN", 2, 1, 1, "none", "float4_e2m1fn"),
)}


def format_of(t) -> Format | None:
    """The format of minifloat scalar type `t`, or None."""
    return FORMATS.get(getattr(t, "kind", None))
