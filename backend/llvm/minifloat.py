"""8- and 4-bit floats in LLVM IR: a byte (``i8``) in memory, f32 in arithmetic.

LLVM has no f8 types, so a cast to or from one is integer arithmetic on
the bits, written here once for every format of ir/minifloat.py, on
scalars and vectors alike (no branch, no table: it vectorizes).

decode (f8 -> f32, exact)::

    e = bits >> M & (2^E - 1),  f = bits & (2^M - 1)
    e > 0:   f32 bits  (e - bias + 127) << 23 | f << (23 - M)
    e == 0:  f * 2^(1 - bias - M)                 (a subnormal: exact in f32)
    sign bit moved to bit 31; NaN / inf codes as the format has them

encode (f32 or f64 -> f8, round to nearest even, overflow to inf / NaN)::

    a = |x| bits (W-bit integer; P mantissa bits, B bias of the source)
    a >= 2^(1 - bias) (normal):  r = (a + 2^(s-1) - 1 + (a >> s & 1)) >> s,  s = P - M
                                 code = r - ((B - bias) << M)    (the carry of rounding
                                 moves into the exponent, as it should)
    a <  2^(1 - bias):           code = roundeven(|x| * 2^(bias - 1 + M))  (subnormal,
                                 or the least normal when it rounds up)
    code > max_code or x = inf:  overflow_code;   x NaN: nan_code
    sign: the top bit (7; 3 for f4E2M1FN), a NaN's too (the FNUZ formats
    have no -0 and one NaN, 0x80; f4E2M1FN no NaN: it gives 0)
"""

from __future__ import annotations

from llvmlite import ir

from ...ir.minifloat import Format

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
F32, F64 = ir.FloatType(), ir.DoubleType()


class _Lanes:
    """Builds constants and types of the shape (scalar or n lanes) of `like`."""

    def __init__(self, like):
        self.n = like.type.count if isinstance(like.type, ir.VectorType) else None

    def ty(self, t):
        return ir.VectorType(t, self.n) if self.n else t

    def const(self, t, v):
        return ir.Constant(self.ty(t), [v] * self.n) if self.n else ir.Constant(t, v)


def decode(b, bits, fmt: Format):
    """The f32 value of f8 `bits` (i8 or a vector of them)."""
    L = _Lanes(bits)
    c = lambda v: L.const(I32, v)  # noqa: E731
    u = b.zext(bits, L.ty(I32))
    m = fmt.mbits
    e = b.and_(b.lshr(u, c(m)), c((1 << fmt.ebits) - 1))
    f = b.and_(u, c((1 << m) - 1))
    normal = b.or_(b.shl(b.add(e, c(127 - fmt.bias)), c(23)), b.shl(f, c(23 - m)))
    sub = b.bitcast(b.fmul(b.uitofp(f, L.ty(F32)), L.const(F32, 2.0 ** (1 - fmt.bias - m))), L.ty(I32))
    mag = b.select(b.icmp_unsigned("==", e, c(0)), sub, normal)
    top = c((1 << fmt.ebits) - 1)
    if fmt.specials == "ieee":       # exponent all ones: inf (f == 0) or NaN
        special = b.icmp_unsigned("==", e, top)
        mag = b.select(special, b.or_(c(0x7F800000), b.shl(f, c(23 - m))), mag)
        mag = b.select(b.and_(special, b.icmp_unsigned("!=", f, c(0))), b.or_(mag, c(0x00400000)), mag)
    elif fmt.specials == "fn":       # S.1111.111 only
        mag = b.select(b.icmp_unsigned("==", b.and_(u, c(0x7F)), c(0x7F)), c(0x7FC00000), mag)
    sb = fmt.sign_bit
    out = b.or_(mag, b.shl(b.and_(u, c(1 << sb)), c(31 - sb)))
    if fmt.specials == "fnuz":       # 0x80 is the NaN
        out = b.select(b.icmp_unsigned("==", u, c(0x80)), c(0x7FC00000), out)
    return b.bitcast(out, L.ty(F32))


def encode(b, x, fmt: Format, module):
    """The f8 bits (i8) nearest `x` (an f32 or f64, scalar or vector),
    ties to even; beyond the largest finite value, inf or NaN."""
    L = _Lanes(x)
    wide = (x.type.element if L.n else x.type) == F64
    it, W, P, B = (I64, 64, 52, 1023) if wide else (I32, 32, 23, 127)
    c = lambda v: L.const(it, v)  # noqa: E731
    m = fmt.mbits
    bits = b.bitcast(x, L.ty(it))
    sign = b.lshr(bits, c(W - 1))
    a = b.and_(bits, c((1 << (W - 1)) - 1))
    s = P - m
    rounded = b.lshr(b.add(b.add(a, c((1 << (s - 1)) - 1)), b.and_(b.lshr(a, c(s)), c(1))), c(s))
    normal = b.sub(rounded, c((B - fmt.bias) << m))
    ft = L.ty(F64 if wide else F32)
    from .intrinsics import intrinsic
    absx = b.call(intrinsic(module, "llvm.fabs", ft), [x])
    scaled = b.fmul(absx, L.const(F64 if wide else F32, 2.0 ** (fmt.bias - 1 + m)))
    sub = b.fptoui(b.call(intrinsic(module, "llvm.roundeven", ft), [scaled]), L.ty(it))
    min_normal_bits = (B + fmt.min_normal_exponent) << P
    is_sub = b.icmp_unsigned("<", a, c(min_normal_bits))
    code = b.select(is_sub, sub, normal)
    inf_bits = ((1 << (W - P - 1)) - 1) << P
    over = b.or_(b.icmp_unsigned(">", code, c(fmt.max_code)), b.icmp_unsigned("==", a, c(inf_bits)))
    code = b.select(over, c(fmt.overflow_code), code)
    is_nan = b.icmp_unsigned(">", a, c(inf_bits))
    code = b.select(is_nan, c(fmt.nan_code), code)
    if fmt.specials == "fnuz":       # no -0; the one NaN has the sign bit already
        signed = b.and_(b.icmp_unsigned("!=", code, c(0)), b.icmp_unsigned("!=", code, c(0x80)))
        code = b.select(signed, b.or_(code, b.shl(sign, c(7))), code)
    else:                            # a NaN keeps its sign too (ONNX's -NaN -> -NaN)
        code = b.or_(code, b.shl(sign, c(fmt.sign_bit)))
    return b.trunc(code, L.ty(I8))
