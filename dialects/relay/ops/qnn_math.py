"""Integer arithmetic shared by the qnn operators and their lowering.

The qnn ops' reference implementations (``compute``) and the lowering of
qnn to plain relay ops (``passes/quantize/qnn_lower.py``) both build on the
helpers here, so that the two agree bit for bit.

Fixed-point multiplication (TVM's ``GetFixedPointMultiplierShift`` and
``FixedPointMultiply``, gemmlowp's scheme).  A real multiplier ``M > 0`` is
written ``M = m * 2^-31 * 2^shift`` with ``m`` an int32 in ``[2^30, 2^31)``:

    sig, exp = frexp(M)              # M = sig * 2^exp, sig in [0.5, 1)
    m = round(sig * 2^31)            # round half away from zero, as std::round
    if m == 2^31: m = 2^30; exp += 1 # sig rounded up to 1.0
    shift = exp

and ``x * M`` is computed in int64 as

    left  = max(shift, 0);  right = max(-shift, 0);  total = right + 31
    p = (x << left) * m
    UPWARD:    (p + 2^(total-1)) >> total            # x.5 rounds toward +inf
    TONEAREST: (p + 2^(total-1) - (p < 0)) >> total  # x.5 rounds away from zero

with arithmetic right shifts.  ``- (p < 0)`` is written ``+ (p >> 63)`` (0 or
-1), so the lowering needs no comparison.  Multipliers so small that
``total`` would pass 63 are clamped to 63: their products round to 0 (or -1
at worst) either way, and shifting an int64 by 64 or more is undefined.

Multipliers come from float32 scales divided in double precision,
``double(in_scale) / double(out_scale)``, exactly as TVM does.
"""

from __future__ import annotations

import math

from ....ir.lazy import lazy_module

np = lazy_module("numpy")   # parsing and printing never need numpy

ROUNDINGS = ("UPWARD", "TONEAREST")
DEFAULT_ROUNDING = "UPWARD"        # TVM's RequantizeConfig default for "None"
COMPUTE_DTYPES = ("int64", "float32", "float64")
DEFAULT_COMPUTE_DTYPE = "int64"    # TVM's RequantizeConfig default for "None"
MAX_TOTAL_SHIFT = 63


def qrange(dtype) -> tuple[int, int]:
    """(min, max) of an integer numpy dtype (ml_dtypes' int4 / int2 included)."""
    if str(dtype) in ("int4", "uint4", "int2", "uint2"):
        import ml_dtypes
        info = ml_dtypes.iinfo(dtype)
    else:
        info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def float_bounds(lo: int, hi: int, ftype) -> tuple[float, float]:
    """[lo, hi] as the widest range of `ftype` values inside it, so that a
    float clipped to it converts to the integer type without overflow
    (float32 rounds 2^31 - 1 up to 2^31, which int32 cannot hold)."""
    ft = np.dtype(ftype).type
    flo, fhi = ft(lo), ft(hi)
    if float(fhi) > hi:
        fhi = np.nextafter(fhi, ft(0))
    if float(flo) < lo:
        flo = np.nextafter(flo, ft(0))
    return float(flo), float(fhi)


def per_axis(values, rank: int, axis: int):
    """A scale or zero-point array shaped to broadcast along `axis` of a
    rank-`rank` tensor: scalars and one-element arrays stay scalars, a
    vector of n becomes shape (n, 1, ..., 1) with rank - axis dimensions."""
    v = np.asarray(values)
    if v.size == 1:
        return v.reshape(())
    return v.reshape((v.size,) + (1,) * (rank - 1 - axis))


def multiplier_shift(multiplier: float) -> tuple[int, int]:
    """TVM's GetFixedPointMultiplierShift: (int32 m, shift) with
    multiplier == m * 2^(shift - 31)."""
    if multiplier == 0.0:
        return 0, 0
    sig, exp = math.frexp(multiplier)
    m = math.floor(sig * (1 << 31) + 0.5)   # exact: sig * 2^31 has < 53 bits
    if m == 1 << 31:
        m //= 2
        exp += 1
    return int(m), int(exp)


class ScaleError(ValueError):
    """A requantization multiplier (in_scale / out_scale) that is not a
    finite, positive number: the op that has it reports it as an error."""


class FixedPoint:
    """The int64 constants of ``x * (in_scale / out_scale)`` per element of
    the (broadcast) scale arrays: multiplier, left shift, total right shift
    and the rounding constant 2^(total-1)."""

    __slots__ = ("m", "left", "total", "round")

    def __init__(self, in_scale, out_scale):
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            mult = float_multipliers(in_scale, out_scale)
        flat = np.atleast_1d(mult)
        bad = [float(x) for x in flat if not (np.isfinite(x) and x >= 0)]
        if bad:
            raise ScaleError(f"its scales make a requantization multiplier of {bad[0]!r} "
                             f"(input scale / output scale must be finite and not negative)")
        pairs = [multiplier_shift(float(x)) for x in flat]
        m = np.array([p[0] for p in pairs], np.int64)
        shift = np.array([p[1] for p in pairs], np.int64)
        left = np.maximum(shift, 0)
        total = np.minimum(np.maximum(-shift, 0) + 31, MAX_TOTAL_SHIFT)
        shape = np.shape(mult)
        self.m = m.reshape(shape)
        self.left = left.reshape(shape)
        self.total = total.reshape(shape)
        self.round = (np.int64(1) << (total - 1)).reshape(shape)

    @property
    def needs_left_shift(self) -> bool:
        return bool(np.any(self.left))

    def at(self, rank: int, axis: int):
        """(m, left, total, round) shaped to broadcast along `axis`."""
        return tuple(per_axis(a, rank, axis) for a in (self.m, self.left, self.total, self.round))


def fixed_point_multiply(x, fp: FixedPoint, rank: int, axis: int, rounding: str):
    """int64 `x` times the multipliers of `fp` (along `axis`), rounded as
    `rounding` says; the module docstring gives the formula."""
    m, left, total, rnd = fp.at(rank, axis)
    with np.errstate(over="ignore"):
        p = np.left_shift(x, left) * m
        bias = rnd + np.right_shift(p, 63) if rounding == "TONEAREST" else rnd
        return np.right_shift(p + bias, total)


def round_half_away(v):
    """Round to nearest, ties away from zero (TVM's TONEAREST on floats)."""
    return np.sign(v) * np.floor(np.abs(v) + v.dtype.type(0.5))


def requantize(x, in_scale, in_zp, out_scale, out_zp, axis, rounding, compute_dtype, out_dtype):
    """The reference qnn.requantize: ``out_zp + in_scale / out_scale * (x - in_zp)``,
    rounded, saturated to `out_dtype`.  `axis` is non-negative."""
    rank = x.ndim
    lo, hi = qrange(out_dtype)
    if compute_dtype == "int64":
        v = x.astype(np.int64) - per_axis(np.asarray(in_zp, np.int64), rank, axis)
        v = fixed_point_multiply(v, FixedPoint(in_scale, out_scale), rank, axis, rounding)
        v = v + per_axis(np.asarray(out_zp, np.int64), rank, axis)
        return np.clip(v, lo, hi).astype(out_dtype)
    ft = np.dtype(compute_dtype)
    v = x.astype(ft) - per_axis(np.asarray(in_zp).astype(ft), rank, axis)
    v = v * per_axis(float_multipliers(in_scale, out_scale).astype(ft), rank, axis)
    v = v + per_axis(np.asarray(out_zp).astype(ft), rank, axis)
    v = np.floor(v + ft.type(0.5)) if rounding == "UPWARD" else round_half_away(v)
    flo, fhi = float_bounds(lo, hi, ft)
    return np.minimum(np.maximum(v, ft.type(flo)), ft.type(fhi)).astype(out_dtype)


def float_multipliers(in_scale, out_scale):
    """double(in_scale) / double(out_scale), the float scales as float32 first."""
    ins = np.asarray(in_scale, np.float32).astype(np.float64)
    outs = np.asarray(out_scale, np.float32).astype(np.float64)
    ins = ins.reshape(()) if ins.size == 1 else ins.reshape(-1)
    outs = outs.reshape(()) if outs.size == 1 else outs.reshape(-1)
    if ins.ndim and outs.ndim and ins.size != outs.size:
        raise ValueError(f"scales of {ins.size} and {outs.size} values do not match")
    return ins / outs
