"""LLVM declarations for math: llvm.* intrinsics and libm calls.

``tir.intrin`` maps to LLVM intrinsics where LLVM has one (so the
vectorizer and the backend know the function: ``llvm.sqrt`` becomes
``vsqrtps``, ``llvm.exp`` a libm call), except float ``exp`` (and
``sigmoid``), expanded inline by :func:`exp_f32` so that it vectorizes,
and otherwise to libm (``erff``),
called lane by lane for vectors.  ``round`` is round-half-to-even
(``llvm.roundeven``), as numpy's ``rint`` and the interpreter.  No fast-math
flags anywhere: results must match numpy to 1e-5.
"""

from __future__ import annotations

from llvmlite import ir

from .irutil import BFloatType, declare

# tir intrinsic -> LLVM intrinsic base name
LLVM_INTRINSIC = {
    "exp": "llvm.exp", "log": "llvm.log", "sqrt": "llvm.sqrt", "fabs": "llvm.fabs",
    "floor": "llvm.floor", "ceil": "llvm.ceil", "round": "llvm.roundeven", "trunc": "llvm.trunc",
    "sin": "llvm.sin", "cos": "llvm.cos", "pow": "llvm.pow", "fma": "llvm.fma", "tanh": "llvm.tanh",
    "log2": "llvm.log2", "log10": "llvm.log10",
}
# tir intrinsic -> libm name for (float, double)
LIBM = {"erf": ("erff", "erf"), "tan": ("tanf", "tan"), "asin": ("asinf", "asin"), "acos": ("acosf", "acos"),
        "atan": ("atanf", "atan"), "sinh": ("sinhf", "sinh"), "cosh": ("coshf", "cosh"),
        "asinh": ("asinhf", "asinh"), "acosh": ("acoshf", "acosh"), "atanh": ("atanhf", "atanh")}


def mangle(t) -> str:
    """LLVM's overload suffix for a type: f32, v8f32, i64."""
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{mangle(t.element)}"
    if isinstance(t, ir.FloatType):
        return "f32"
    if isinstance(t, ir.DoubleType):
        return "f64"
    if isinstance(t, ir.HalfType):
        return "f16"
    if str(t) == "bfloat":
        return "bf16"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    return str(t)


def intrinsic(module, base, t, nargs=1):
    """``base.<mangle(t)>`` taking `nargs` arguments of type t."""
    return declare(module, f"{base}.{mangle(t)}", t, [t] * nargs)


def _scalar_libm(module, builder, names, x):
    t = x.type
    if isinstance(t, ir.DoubleType):
        return builder.call(declare(module, names[1], t, [t]), [x])
    if isinstance(t, ir.FloatType):
        return builder.call(declare(module, names[0], t, [t]), [x])
    f32 = ir.FloatType()   # half and bfloat go through float
    w = builder.fpext(x, f32)
    return builder.fptrunc(builder.call(declare(module, names[0], f32, [f32]), [w]), t)


def libm_call(module, builder, names, x):
    """A unary libm function, lane by lane for a vector."""
    t = x.type
    if not isinstance(t, ir.VectorType):
        return _scalar_libm(module, builder, names, x)
    out = ir.Constant(t, ir.Undefined)
    for lane in range(t.count):
        i = ir.Constant(ir.IntType(32), lane)
        out = builder.insert_element(out, _scalar_libm(module, builder, names, builder.extract_element(x, i)), i)
    return out


def one(t):
    if isinstance(t, ir.VectorType):
        return ir.Constant(t, [ir.Constant(t.element, 1.0)] * t.count)
    return ir.Constant(t, 1.0)


def _splat(t, v):
    if isinstance(t, ir.VectorType):
        return ir.Constant(t, [ir.Constant(t.element, v)] * t.count)
    return ir.Constant(t, v)


def _is_f32(t):
    return isinstance(t, ir.FloatType) or (isinstance(t, ir.VectorType) and isinstance(t.element, ir.FloatType))


# e^r on |r| <= ln2/2: Taylor to r^7, truncation error < 1e-8 relative
_EXP_POLY = (1 / 5040, 1 / 720, 1 / 120, 1 / 24, 1 / 6, 1 / 2, 1.0, 1.0)
_LN2_HI, _LN2_LO = 0.693145751953125, 1.42860682030941723212e-6


def exp_f32(module, builder, x):
    """exp of a float or a float vector, inline, as straight-line code the
    loop vectorizer widens (a libm ``expf`` call stays scalar: no vector
    math library is linked).  Cody-Waite reduction x = n ln2 + r with n =
    roundeven(x log2 e) and two fma steps, a degree-7 polynomial for e^r,
    and the scale 2^n built from exponent bits in two halves so that 2^128
    (overflow to inf) and 2^-150 (gradual underflow) come out right; within
    2 ulp of the correctly rounded result.  NaN propagates; x is clamped to
    [-104, 88.8], outside which the float result is 0 or inf anyway."""
    b = builder
    t = x.type
    it = ir.VectorType(ir.IntType(32), t.count) if isinstance(t, ir.VectorType) else ir.IntType(32)
    fma = intrinsic(module, "llvm.fma", t, 3)
    xc = b.select(b.fcmp_ordered(">", x, _splat(t, 88.8)), _splat(t, 88.8), x)
    xc = b.select(b.fcmp_ordered("<", xc, _splat(t, -104.0)), _splat(t, -104.0), xc)
    n = b.call(intrinsic(module, "llvm.roundeven", t), [b.fmul(xc, _splat(t, 1.4426950408889634))])
    r = b.call(fma, [n, _splat(t, -_LN2_HI), xc])
    r = b.call(fma, [n, _splat(t, -_LN2_LO), r])
    p = _splat(t, _EXP_POLY[0])
    for c in _EXP_POLY[1:]:
        p = b.call(fma, [p, r, _splat(t, c)])
    ni = b.fptosi(n, it)
    n1 = b.ashr(ni, _splat(it, 1))
    n2 = b.sub(ni, n1)
    s1 = b.bitcast(b.shl(b.add(n1, _splat(it, 127)), _splat(it, 23)), t)
    s2 = b.bitcast(b.shl(b.add(n2, _splat(it, 127)), _splat(it, 23)), t)
    y = b.fmul(b.fmul(p, s1), s2)
    return b.select(b.fcmp_unordered("uno", x, x), x, y)


def dot4_u8s8(builder, a, b):
    """tir's dot4_u8s8 in plain integer arithmetic (any CPU): per byte i,
    (a >> 8i) & 255 times b's byte sign-extended (shifted to the top, then
    arithmetically back down), the four products summed."""
    t = a.type
    total = None
    for i in range(4):
        au = builder.and_(builder.lshr(a, _splat(t, 8 * i)), _splat(t, 255))
        bs = builder.ashr(builder.shl(b, _splat(t, 24 - 8 * i)), _splat(t, 24))
        p = builder.mul(au, bs)
        total = p if total is None else builder.add(total, p)
    return total


def dot2_bf16(builder, a, b):
    """tir's dot2_bf16 in plain arithmetic (any CPU): each i32 word's halves
    made f32 (the low half shifted up, the high half masked), the two
    products (exact in f32) summed."""
    t = a.type
    ft = ir.VectorType(ir.FloatType(), t.count) if isinstance(t, ir.VectorType) else ir.FloatType()

    def lo(w):
        return builder.bitcast(builder.shl(w, _splat(t, 16)), ft)

    def hi(w):
        return builder.bitcast(builder.and_(w, _splat(t, -65536)), ft)
    return builder.fadd(builder.fmul(hi(a), hi(b)), builder.fmul(lo(a), lo(b)))


# The x86 instructions that add a dot of words into an accumulator, per
# tir intrinsic and vector width (lanes of the i32/f32 result): vpdpbusd
# (AVX512-VNNI; the 256- and 128-bit forms with AVX512VL, or AVX-VNNI,
# which LLVM selects from the same intrinsics) and vdpbf16ps (AVX512-BF16;
# its narrower forms need AVX512VL).  vdpbf16ps adds the high products
# first, then the low ones, each rounded, and flushes denormals: the fused
# acc + dot2_bf16 may differ from the unfused one in the last bits.
DOT_INSTRUCTIONS = {
    "dot4_u8s8": {16: "llvm.x86.avx512.vpdpbusd.512", 8: "llvm.x86.avx512.vpdpbusd.256",
                  4: "llvm.x86.avx512.vpdpbusd.128"},
    "dot2_bf16": {16: "llvm.x86.avx512bf16.dpbf16ps.512", 8: "llvm.x86.avx512bf16.dpbf16ps.256",
                  4: "llvm.x86.avx512bf16.dpbf16ps.128"},
}


def dot_accumulate(module, builder, name, acc, a, b, lanes):
    """acc + `name`(a, b) (a DOT_INSTRUCTIONS intrinsic on vectors of i32
    words; acc of its result type) through the instruction on pieces of
    `lanes` (a width it has that divides the vectors'), the pieces put
    back together."""
    n = acc.type.count
    piece = ir.VectorType(acc.type.element, lanes)
    words = ir.VectorType(ir.IntType(32), lanes)
    if name == "dot2_bf16":
        operand = ir.VectorType(BFloatType(), 2 * lanes)
    else:
        operand = words
    fn = declare(module, DOT_INSTRUCTIONS[name][lanes], piece, [piece, operand, operand])

    def part(v, k):
        if n != lanes:
            v = builder.shuffle_vector(v, ir.Constant(v.type, None),
                                       ir.Constant(ir.VectorType(ir.IntType(32), lanes), list(range(k, k + lanes))))
        return v

    def word_part(v, k):
        v = part(v, k)
        return v if operand is words else builder.bitcast(v, operand)
    parts = [builder.call(fn, [part(acc, k), word_part(a, k), word_part(b, k)]) for k in range(0, n, lanes)]
    while len(parts) > 1:   # concatenate pairwise: shufflevector joins two of one type
        joined = []
        for x, y in zip(parts[::2], parts[1::2]):
            w = x.type.count
            mask = ir.Constant(ir.VectorType(ir.IntType(32), 2 * w), list(range(2 * w)))
            joined.append(builder.shuffle_vector(x, y, mask))
        parts = joined
    return parts[0]


def emit_intrinsic(module, builder, name, args):
    """The value of ``tir.intrin name(args)`` (args are LLVM values of one type)."""
    t = args[0].type
    if name == "dot4_u8s8":
        return dot4_u8s8(builder, *args)
    if name == "dot2_bf16":
        return dot2_bf16(builder, *args)
    if name == "exp" and _is_f32(t):
        return exp_f32(module, builder, args[0])
    base = LLVM_INTRINSIC.get(name)
    if base is not None:
        return builder.call(intrinsic(module, base, t, len(args)), list(args))
    if name in LIBM:
        return libm_call(module, builder, LIBM[name], args[0])
    if name == "rsqrt":
        s = builder.call(intrinsic(module, "llvm.sqrt", t), [args[0]])
        return builder.fdiv(one(t), s)
    if name == "sigmoid":
        nx = builder.fneg(args[0])
        e = exp_f32(module, builder, nx) if _is_f32(t) else builder.call(intrinsic(module, "llvm.exp", t), [nx])
        return builder.fdiv(one(t), builder.fadd(one(t), e))
    raise KeyError(name)
