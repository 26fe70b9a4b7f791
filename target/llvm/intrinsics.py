"""LLVM declarations for math: llvm.* intrinsics and libm calls.

``tir.intrin`` maps to LLVM intrinsics where LLVM has one (so the
vectorizer and the backend know the function: ``llvm.sqrt`` becomes
``vsqrtps``, ``llvm.exp`` a libm call), and otherwise to libm (``erff``),
called lane by lane for vectors.  ``round`` is round-half-to-even
(``llvm.roundeven``), as numpy's ``rint`` and the interpreter.  No fast-math
flags anywhere: results must match numpy to 1e-5.
"""

from __future__ import annotations

from llvmlite import ir

from .irutil import declare

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


def emit_intrinsic(module, builder, name, args):
    """The value of ``tir.intrin name(args)`` (args are LLVM values of one type)."""
    t = args[0].type
    base = LLVM_INTRINSIC.get(name)
    if base is not None:
        return builder.call(intrinsic(module, base, t, len(args)), list(args))
    if name in LIBM:
        return libm_call(module, builder, LIBM[name], args[0])
    if name == "rsqrt":
        s = builder.call(intrinsic(module, "llvm.sqrt", t), [args[0]])
        return builder.fdiv(one(t), s)
    if name == "sigmoid":
        e = builder.call(intrinsic(module, "llvm.exp", t), [builder.fneg(args[0])])
        return builder.fdiv(one(t), builder.fadd(one(t), e))
    raise KeyError(name)
