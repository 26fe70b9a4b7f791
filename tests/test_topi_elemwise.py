"""TE computes of relay's elementwise operators (conversion/relay_to_te/topi_elemwise.py)
against each op's numpy compute(): unscheduled, default-scheduled, and LLVM-compiled."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from topi_check import check, prim  # noqa: E402
from tvmd.conversion.relay_to_te.pass_ import lower_function  # noqa: E402
from tvmd.ir.diagnostics import DiagnosticError  # noqa: E402
from tvmd.parser import parse_module  # noqa: E402

NAN, INF = np.nan, np.inf
rng = np.random.default_rng(7)


def normal(shape, dtype="float32"):
    return rng.standard_normal(shape).astype(dtype)


def ints(shape, low, high, dtype="int32", nonzero=False):
    a = rng.integers(low, high, size=shape)
    if nonzero:
        a[a == 0] = 1
    return a.astype(dtype)


def ty(shape, dtype):
    return f"tensor<{shape}x{dtype}>" if shape else f"tensor<{dtype}>"


def binop(op, a, b, inputs=None, attrs=""):
    """check `op(%a, %b)` for a, b = (shape, dtype)."""
    return check(prim([("a", ty(*a)), ("b", ty(*b))], [f"%r = {op}(%a, %b){attrs}"]), inputs=inputs)


def unop(op, x, attrs="", inputs=None, **kw):
    return check(prim([("x", ty(*x))], [f"%r = {op}(%x){attrs}"]), inputs=inputs, **kw)


# -- binary -----------------------------------------------------------------------------

FLOAT_BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "floor_divide", "floor_mod",
                "mod", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                "logical_and", "logical_or", "logical_xor"]


@pytest.mark.parametrize("op", FLOAT_BINARY)
@pytest.mark.parametrize("shapes", [("2x3x4", "3x1"), ("4", "2x4"), ("", "3")])
def test_binary_float_broadcast(op, shapes):
    binop(op, (shapes[0], "f32"), (shapes[1], "f32"))


def test_power_float():
    a, b = np.abs(normal((2, 3, 4))) + 0.1, normal((3, 1))
    binop("power", ("2x3x4", "f32"), ("3x1", "f32"), inputs=[a, b])


SPECIALS = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 7.0, -7.0, 3.0], np.float32)


@pytest.mark.parametrize("op", ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                                "maximum", "minimum", "logical_and", "logical_or", "logical_xor",
                                "floor_divide", "floor_mod", "mod"])
def test_binary_float_specials(op):
    # every pair of NaN, infinities, signed zeros and a few finite values
    a, b = np.meshgrid(SPECIALS, SPECIALS, indexing="ij")
    check(prim([("a", ty("12x12", "f32")), ("b", ty("12x12", "f32"))], [f"%r = {op}(%a, %b)"]),
          inputs=[a.copy(), b.copy()], rtol=1e-6, atol=0)


def test_floor_divide_rounding_edge():
    # a / b rounds up to an integer where the floored quotient is one less: numpy's fmod-based
    # algorithm gives the exact answer, floor(a / b) would not
    a = np.array([1.0, -1.0, 0.3, 7.0, -7.0, 1e-8, 5.0, 4.0], np.float32)
    b = np.array([0.1, 0.1, 0.1, 0.7, 0.7, -3.0, -0.5, 0.5], np.float32)
    binop("floor_divide", ("8", "f32"), ("8", "f32"), inputs=[a, b])
    binop("floor_mod", ("8", "f32"), ("8", "f32"), inputs=[a, b])


INT_BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "floor_divide", "floor_mod",
              "mod", "bitwise_and", "bitwise_or", "bitwise_xor", "equal", "not_equal", "less", "less_equal",
              "greater", "greater_equal", "logical_and", "logical_or", "logical_xor"]


@pytest.mark.parametrize("op", INT_BINARY)
@pytest.mark.parametrize("dtype", ["i32", "i8"])
def test_binary_int(op, dtype):
    npdt = {"i32": "int32", "i8": "int8"}[dtype]
    a = ints((3, 4), -20, 21, npdt)
    b = ints((4,), -6, 7, npdt, nonzero=True)   # both signs, no zero divisor
    binop(op, ("3x4", dtype), ("4", dtype), inputs=[a, b])


def test_binary_int_wraps():
    a = np.array([120, -120, 100, -128], np.int8)
    b = np.array([10, -10, 100, 1], np.int8)
    for op in ["add", "subtract", "multiply"]:
        binop(op, ("4", "i8"), ("4", "i8"), inputs=[a, b])


@pytest.mark.parametrize("dtype", ["i32", "i64"])
def test_shifts(dtype):
    npdt = {"i32": "int32", "i64": "int64"}[dtype]
    bits = 32 if dtype == "i32" else 64
    a = ints((2, 8), -1000, 1000, npdt)
    b = ints((8,), 0, bits, npdt)
    binop("left_shift", ("2x8", dtype), ("8", dtype), inputs=[a, b])
    binop("right_shift", ("2x8", dtype), ("8", dtype), inputs=[a, b])


def test_power_int():
    a = ints((3, 4), -4, 5)
    b = np.array([0, 1, 2, 3], np.int32)
    binop("power", ("3x4", "i32"), ("4", "i32"), inputs=[a, b])
    # negative exponents truncate: 2 ** -1 is 0, 1 ** -3 is 1, (-1) ** -1 is -1
    a = np.array([2, 1, -1, 3], np.int32)
    b = np.array([-1, -3, -1, -2], np.int32)
    binop("power", ("4", "i32"), ("4", "i32"), inputs=[a, b])


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "maximum", "minimum", "floor_divide",
                                "floor_mod", "mod", "right_shift", "left_shift", "less", "greater_equal",
                                "equal", "bitwise_xor"])
def test_binary_unsigned(op):
    # values past 127: signed max/compare/divide/shift would get these wrong
    a = ints((4, 8), 0, 256, "uint8")
    b = ints((8,), 1, 256, "uint8")
    if op.endswith("shift"):
        b = ints((8,), 0, 8, "uint8")
    binop(op, ("4x8", "ui8"), ("8", "ui8"), inputs=[a, b])


@pytest.mark.parametrize("op", ["maximum", "minimum", "less", "greater_equal", "add", "bitwise_and", "divide",
                                "floor_divide", "floor_mod", "mod", "right_shift"])
def test_binary_uint64(op):
    # compares and divides as unsigned without widening: values past 2**63
    a = np.array([2 ** 64 - 1, 2 ** 63, 5, 0, 2 ** 63 - 1, 7], np.uint64)
    b = np.array([1, 2 ** 63 + 1, 2 ** 63, 3, 2 ** 63, 7], np.uint64)
    if op == "right_shift":
        b = np.array([1, 63, 64, 3, 0, 7], np.uint64)
    if op == "divide":
        b = np.array([3, 2 ** 62 + 1, 2 ** 63, 3, 2 ** 61, 7], np.uint64)
    binop(op, ("6", "ui64"), ("6", "ui64"), inputs=[a, b])


@pytest.mark.parametrize("op", ["add", "multiply", "maximum", "minimum", "equal", "not_equal", "less",
                                "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
                                "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"])
def test_binary_bool(op):
    a, b = np.meshgrid([False, True], [False, True], indexing="ij")
    binop(op, ("2x2", "i1"), ("2x2", "i1"), inputs=[a.copy(), b.copy()])


def test_binary_splat_constant_operand():
    check(prim([("x", ty("2x4", "i32"))], ["%c = constant dense<-3> : tensor<i32>", "%r = floor_mod(%x, %c)"]))


# -- unary --------------------------------------------------------------------------------

DOMAINS = {   # op -> (low, high) of the inputs
    "exp": (-5, 5), "log": (0.05, 9), "log2": (0.05, 9), "log10": (0.05, 9), "sqrt": (0, 9),
    "rsqrt": (0.05, 9), "sigmoid": (-8, 8), "tanh": (-4, 4), "erf": (-3, 3), "sin": (-6, 6), "cos": (-6, 6),
    "tan": (-1.4, 1.4), "asin": (-0.99, 0.99), "acos": (-0.99, 0.99), "atan": (-9, 9), "sinh": (-4, 4),
    "cosh": (-4, 4), "asinh": (-9, 9), "acosh": (1, 9), "atanh": (-0.99, 0.99),
}


@pytest.mark.parametrize("op", sorted(DOMAINS))
def test_float_math(op):
    lo, hi = DOMAINS[op]
    x = rng.uniform(lo, hi, size=(3, 20)).astype(np.float32)
    unop(op, ("3x20", "f32"), inputs=[x])


@pytest.mark.parametrize("op", ["exp", "log", "sqrt", "sin", "atan", "tanh", "erf"])
def test_float_math_f64(op):
    lo, hi = DOMAINS[op]
    x = rng.uniform(lo, hi, size=(2, 8)).astype(np.float64)
    unop(op, ("2x8", "f64"), inputs=[x], rtol=1e-12, atol=1e-12)


ROUNDING_INPUT = np.array([[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.2, 0.7],
                           [3.49, -3.51, 1e6 + 0.5, -0.0, NAN, INF, -INF, 2.0]], np.float32)


@pytest.mark.parametrize("op", ["floor", "ceil", "round", "trunc", "abs", "sign", "negative", "nn.relu",
                                "isnan", "isinf", "isfinite", "logical_not", "copy", "zeros_like", "ones_like"])
def test_unary_float_specials(op):
    unop(op, ("2x8", "f32"), inputs=[ROUNDING_INPUT.copy()], rtol=0, atol=0)


@pytest.mark.parametrize("op", ["floor", "ceil", "round", "trunc", "abs", "sign", "negative", "nn.relu",
                                "isnan", "isinf", "isfinite", "logical_not", "bitwise_not", "copy",
                                "zeros_like", "ones_like"])
@pytest.mark.parametrize("dtype", ["i32", "ui8"])
def test_unary_int(op, dtype):
    x = ints((4, 16), -50, 51, "int32") if dtype == "i32" else ints((4, 16), 0, 256, "uint8")
    x[0, :3] = 0
    unop(op, ("4x16", dtype), inputs=[x])


@pytest.mark.parametrize("op", ["logical_not", "bitwise_not", "abs", "copy", "zeros_like", "ones_like",
                                "floor", "isnan", "isfinite"])
def test_unary_bool(op):
    unop(op, ("2", "i1"), inputs=[np.array([False, True])])


@pytest.mark.parametrize("alpha", [0.01, 0.25])
def test_leaky_relu(alpha):
    x = normal((2, 3, 16))
    x[0, 0, :2] = [0.0, NAN]
    unop("nn.leaky_relu", ("2x3x16", "f32"), f" {{alpha = {alpha}}}", inputs=[x])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    x = rng.uniform(-5, 5, size=(4, 16)).astype(np.float32)
    unop("nn.gelu", ("4x16", "f32"), f' {{approximate = "{approximate}"}}', inputs=[x])


@pytest.mark.parametrize("dtype,lo,hi", [("f32", -0.5, 0.75), ("f32", 1.0, -1.0), ("i32", -2.5, 3.7),
                                         ("i8", -1000.0, 50.0), ("ui8", -1.0, 300.0), ("ui8", 20.5, 200.0)])
def test_clip(dtype, lo, hi):
    if dtype == "f32":
        x = normal((3, 8))
        x[0, :3] = [NAN, INF, -INF]
    elif dtype == "ui8":
        x = ints((3, 8), 0, 256, "uint8")
    else:
        x = ints((3, 8), -100, 101, {"i32": "int32", "i8": "int8"}[dtype])
    unop("clip", ("3x8", dtype), f" {{a_min = {lo}, a_max = {hi}}}", inputs=[x])


CASTS = [  # (from, to, input)
    ("f32", "int32", np.array([-3.7, -0.5, 0.0, 0.9, 2.5, 100.2, -77.9, 5.0], np.float32)),
    ("f32", "uint8", np.array([0.0, 1.5, 127.9, 128.2, 200.0, 255.0, 3.0, 9.9], np.float32)),
    ("f32", "bool", np.array([0.0, -0.0, 1.0, NAN, -2.0, INF, 0.5, 0.0], np.float32)),
    ("f32", "float64", np.array([0.1, -2.5, 1e30, NAN, INF, 0.0, 3.0, -1e-30], np.float32)),
    ("f64", "float32", np.array([0.1, -2.5, 1e30, NAN, INF, 0.0, 3.0, -1e-30], np.float64)),
    ("i32", "float32", np.array([-7, 0, 1, 2 ** 24 + 1, -(2 ** 20), 5, 6, 7], np.int32)),
    ("i32", "int8", np.array([-129, 128, 255, -1, 0, 1000, 127, -128], np.int32)),
    ("i32", "bool", np.array([0, 1, -1, 2, 256, 0, 7, -8], np.int32)),
    ("i8", "uint8", np.array([-1, -128, 0, 127, 5, -5, 64, -64], np.int8)),
    ("ui8", "int8", np.array([255, 128, 0, 127, 5, 200, 64, 1], np.uint8)),
    ("ui8", "int32", np.array([255, 128, 0, 127, 5, 200, 64, 1], np.uint8)),
    ("ui8", "float32", np.array([255, 128, 0, 127, 5, 200, 64, 1], np.uint8)),
    ("i8", "int64", np.array([-1, -128, 0, 127, 5, -5, 64, -64], np.int8)),
    ("i64", "uint64", np.array([-1, -2 ** 63, 0, 2 ** 63 - 1, 5, -5, 64, -64], np.int64)),
    ("ui64", "int64", np.array([2 ** 64 - 1, 2 ** 63, 0, 2 ** 63 - 1, 5, 7, 64, 1], np.uint64)),
    ("ui32", "float64", np.array([2 ** 32 - 1, 2 ** 31, 0, 2 ** 31 - 1, 5, 7, 64, 1], np.uint32)),
    ("i1", "float32", np.array([True, False, True, True, False, False, True, False])),
    ("i1", "int32", np.array([True, False, True, True, False, False, True, False])),
]


@pytest.mark.parametrize("src,dst,x", CASTS, ids=[f"{s}-{d}" for s, d, _ in CASTS])
def test_cast(src, dst, x):
    unop("cast", ("8", src), f' {{dtype = "{dst}"}}', inputs=[x], rtol=0, atol=0)


def test_cast_like():
    x = np.array([-3.7, -0.5, 0.0, 0.9, 2.5, 100.2], np.float32)
    check(prim([("x", ty("6", "f32")), ("l", ty("2x2", "i8"))], ["%r = cast_like(%x, %l)"]),
          inputs=[x, np.zeros((2, 2), np.int8)])


@pytest.mark.parametrize("body", ["exp(%x)", "tan(%x)", "floor_mod(%x, %x)", "nn.gelu(%x)", "isinf(%x)",
                                  "clip(%x) {a_min = -0.5, a_max = 0.5}", 'cast(%x) {dtype = "int32"}'])
def test_f16(body):
    # half precision: libm math goes through float
    check(prim([("x", ty("3x16", "f16"))], [f"%r = {body}"]), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("body", ["exp(%x)", "sign(%x)", "power(%x, %x)"])
def test_rank0(body):
    check(prim([("x", ty("", "f32"))], [f"%r = {body}"]), inputs=[np.array(1.7, np.float32)])


# -- operators with more operands ---------------------------------------------------------------

@pytest.mark.parametrize("shapes", [("2x3x4", "2x3x4", "2x3x4"), ("3x1", "2x3x4", "4"), ("", "3", "2x1")])
@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_where(shapes, dtype):
    c, x, y = shapes
    check(prim([("c", ty(c, "i1")), ("x", ty(x, dtype)), ("y", ty(y, dtype))], ["%r = where(%c, %x, %y)"]))


@pytest.mark.parametrize("dtype,vtype,vshape", [("f32", "f32", ""), ("i32", "f32", "1"), ("f32", "i32", "1x1"),
                                                ("i1", "f32", "")])
def test_full_like(dtype, vtype, vshape):
    v = np.full([int(d) for d in vshape.split("x")] if vshape else [], 3.0 if vtype == "f32" else -4)
    v = v.astype({"f32": "float32", "i32": "int32"}[vtype])
    x = np.zeros((2, 5), {"f32": "float32", "i32": "int32", "i1": "bool"}[dtype])
    check(prim([("x", ty("2x5", dtype)), ("v", ty(vshape, vtype))], ["%r = full_like(%x, %v)"]), inputs=[x, v])


def test_full_like_splat_constant():
    check(prim([("x", ty("2x5", "f32"))], ["%v = constant dense<1.5> : tensor<f32>", "%r = full_like(%x, %v)"]))


@pytest.mark.parametrize("shape,axis,n", [("2x3x4x16", 1, 3), ("2x3x4x16", -1, 16), ("5x2", 0, 5)])
def test_prelu(shape, axis, n):
    check(prim([("x", ty(shape, "f32")), ("a", ty(str(n), "f32"))], [f"%r = nn.prelu(%x, %a) {{axis = {axis}}}"]))


def test_fused_chain():
    # several elementwise ops in one primitive function: the default schedule inlines all but the output
    check(prim([("x", ty("4x16", "f32")), ("y", ty("16", "f32"))],
               ["%a = floor_mod(%x, %y)", "%b = greater(%a, %x)", "%c = cast(%b) {dtype = \"float32\"}",
                "%d = where(%b, %a, %c)", "%r = nn.gelu(%d)"]))


# -- what has no TE compute: a diagnostic at the op -------------------------------------------

@pytest.mark.parametrize("op,dtype", [("subtract", "i1"),
                                      ("divide", "i1")])
def test_unsupported_is_a_diagnostic(op, dtype):
    m = parse_module(prim([("a", ty("4", dtype)), ("b", ty("4", dtype))], [f"%r = {op}(%a, %b)"]))
    with pytest.raises(DiagnosticError) as info:
        lower_function(m, m.body.first)
    assert op in str(info.value) and "TE compute" in str(info.value)


# -- CUDA: every compute through the cuda default schedule, and nvcc accepting the source -----------

def cuda_compiles(funcs):
    """Lower relay functions [(params, body line)] for target cuda and compile the CUDA C."""
    from tvmd.conversion.relay_to_te.pass_ import LowerRelayToTE
    from tvmd.conversion.te_to_tir.apply_schedule import ApplySchedule
    from tvmd.conversion.te_to_tir.lower import LowerTEToTIR
    from tvmd.dialects.tir.passes.simplify import Simplify
    from tvmd.ir.pass_manager import PassManager
    from tvmd.backend.cuda.codegen import generate
    from tvmd.backend.cuda.compile import compile_cuda
    from tvmd.backend.cuda.target import CUDATarget

    text = "".join(prim(params, [body]).replace("@k(", f"@k{i}(") for i, (params, body) in enumerate(funcs))
    m = parse_module(text)
    PassManager([(None, LowerRelayToTE(target="cuda")), (None, ApplySchedule()), (None, LowerTEToTIR()),
                 (None, Simplify())]).run(m)
    src, kernels = generate(m, CUDATarget("sm_90"))
    cubin = compile_cuda(src, "sm_90", "cubin")
    for k in kernels:
        assert k.symbol.encode() in cubin, k.name


def _have_cuda_compiler():
    from tvmd.backend.cuda.compile import have_compiler
    return have_compiler()


@pytest.mark.skipif(not _have_cuda_compiler(), reason="no CUDA compiler (nvcc or NVRTC) on this machine")
def test_cuda_source_compiles():
    f32, vec = ty("4x32", "f32"), ty("32", "f32")
    funcs = [([("a", f32), ("b", vec)], f"%r = {op}(%a, %b)") for op in FLOAT_BINARY + ["power"]]
    for dtype in ("i32", "ui8"):
        funcs += [([("a", ty("4x32", dtype)), ("b", ty("32", dtype))], f"%r = {op}(%a, %b)")
                  for op in INT_BINARY + ["left_shift", "right_shift", "power"]]
    funcs += [([("x", f32)], f"%r = {op}(%x)") for op in sorted(DOMAINS) + ["nn.gelu", "nn.leaky_relu"]]
    for dtype in ("f32", "i32", "i1"):
        funcs += [([("x", ty("4x32", dtype))], f"%r = {op}(%x)")
                  for op in ["floor", "round", "abs", "sign", "isnan", "isinf", "isfinite", "logical_not", "copy",
                             "ones_like"]]
    funcs += [([("x", ty("4x32", src))], f'%r = cast(%x) {{dtype = "{dst}"}}') for src, dst, _ in CASTS]
    funcs += [([("x", f32)], "%r = clip(%x) {a_min = -1.0, a_max = 2.0}"),
              ([("x", ty("4x32", "ui8"))], "%r = clip(%x) {a_min = 3.0, a_max = 200.0}"),
              ([("c", ty("4x1", "i1")), ("x", f32), ("y", vec)], "%r = where(%c, %x, %y)"),
              ([("x", f32), ("a", ty("4", "f32"))], "%r = nn.prelu(%x, %a) {axis = 0}"),
              ([("x", f32), ("v", ty("", "i32"))], "%r = full_like(%x, %v)"),
              ([("x", f32), ("l", ty("2", "i8"))], "%r = cast_like(%x, %l)")]
    cuda_compiles(funcs)
