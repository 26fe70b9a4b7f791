"""TE computes of relay's reductions (conversion/relay_to_te/topi_reduce.py) against each
op's numpy compute(): unscheduled, default-scheduled, and LLVM-compiled.  Also: every
elementwise and reduce relay op has a TE compute."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from topi_check import check, prim  # noqa: E402
from test_topi_elemwise import _have_cuda_compiler  # noqa: E402

NAN, INF = np.nan, np.inf
rng = np.random.default_rng(11)

# (axis attribute text, keepdims, exclude) over a 2x3x4x5 input
AXES = [("", False, False), ("axis = 1", False, False), ("axis = -1", True, False),
        ("axis = [0, 2]", False, False), ("axis = [-1, 1]", True, False), ("axis = [1]", False, True),
        ("axis = [0, 3]", True, True), ("axis = []", False, False), ("axis = []", False, True)]


def attrs(axis, keepdims, exclude, extra=()):
    items = ([axis] if axis else []) + (["keepdims = true"] if keepdims else []) + \
        (["exclude = true"] if exclude else []) + list(extra)
    return " {" + ", ".join(items) + "}" if items else ""


def red(op, x_type, a="", inputs=None, **kw):
    return check(prim([("x", x_type)], [f"%r = {op}(%x){a}"]), inputs=inputs, **kw)


AXIS_IDS = [f"{a or 'all'}{'-keep' if k else ''}{'-exclude' if x else ''}" for a, k, x in AXES]


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "mean", "logsumexp", "variance", "std",
                                "argmax", "argmin"])
@pytest.mark.parametrize("axis,keepdims,exclude", AXES, ids=AXIS_IDS)
def test_float_axes(op, axis, keepdims, exclude):
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    if op == "prod":
        x = (0.5 + rng.random((2, 3, 4, 5))).astype(np.float32) * np.sign(x)
    red(op, "tensor<2x3x4x5xf32>", attrs(axis, keepdims, exclude), inputs=[x], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "mean", "argmax", "argmin"])
@pytest.mark.parametrize("dtype,npdt", [("i32", "int32"), ("i8", "int8"), ("ui8", "uint8"), ("i64", "int64")])
@pytest.mark.parametrize("axis,keepdims,exclude", [AXES[1], AXES[4], AXES[0]], ids=[AXIS_IDS[i] for i in (1, 4, 0)])
def test_int(op, dtype, npdt, axis, keepdims, exclude):
    # unsigned values past 127 would compare wrong as signed; sums and products wrap in the dtype
    lo, hi = (0, 256) if dtype == "ui8" else (-100, 101)
    x = rng.integers(lo, hi, size=(2, 3, 4, 5)).astype(npdt)
    red(op, f"tensor<2x3x4x5x{dtype}>", attrs(axis, keepdims, exclude), inputs=[x])


def test_mean_int_truncates_toward_zero():
    x = np.array([[-3, -4], [3, 4], [-1, 0], [7, 8]], np.int32)   # means -3.5, 3.5, -0.5, 7.5
    red("mean", "tensor<4x2xi32>", " {axis = 1}", inputs=[x])


@pytest.mark.parametrize("op", ["all", "any", "sum", "prod", "max", "min", "mean", "argmax", "argmin"])
@pytest.mark.parametrize("axis,keepdims,exclude", [AXES[0], AXES[1], AXES[5]], ids=[AXIS_IDS[i] for i in (0, 1, 5)])
def test_bool(op, axis, keepdims, exclude):
    x = rng.random((2, 3, 4, 5)) < 0.8   # some groups all true, some not
    x[0, 1] = True
    x[1, :, 0] = False
    red(op, "tensor<2x3x4x5xi1>", attrs(axis, keepdims, exclude), inputs=[x])


SPECIAL_ROWS = np.array([
    [1.0, NAN, 3.0, NAN, -1.0, 0.0],       # NaN: max/min/sum are NaN, argmax/argmin the first NaN
    [2.0, 5.0, 5.0, -7.0, -7.0, 1.0],      # ties: the first (or with select_last_index the last)
    [-INF, -INF, -INF, -INF, -INF, -INF],  # logsumexp of all -inf is -inf
    [INF, 1.0, 2.0, -INF, 0.0, 3.0],
    [0.0, -0.0, 0.0, -0.0, 0.0, -0.0],
    [1e30, 1e30, -1e30, 3.0, 2.0, 1.0],
], np.float32)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # the numpy reference on NaN and inf
@pytest.mark.parametrize("op", ["sum", "max", "min", "argmax", "argmin", "logsumexp", "all_last"])
def test_float_specials(op):
    if op == "all_last":
        for o in ("argmax", "argmin"):
            red(o, "tensor<6x6xf32>", " {axis = 1, select_last_index = true}", inputs=[SPECIAL_ROWS.copy()])
        return
    red(op, "tensor<6x6xf32>", " {axis = 1}", inputs=[SPECIAL_ROWS.copy()], rtol=1e-6, atol=0)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("axis,keepdims,exclude", AXES, ids=AXIS_IDS)
def test_arg_select_last_index(op, axis, keepdims, exclude):
    x = rng.integers(-2, 3, size=(2, 3, 4, 5)).astype(np.float32)   # many ties
    red(op, "tensor<2x3x4x5xf32>", attrs(axis, keepdims, exclude, ["select_last_index = true"]), inputs=[x])
    red(op, "tensor<2x3x4x5xf32>", attrs(axis, keepdims, exclude), inputs=[x])


@pytest.mark.parametrize("op", ["variance", "std"])
@pytest.mark.parametrize("axis,keepdims", [("axis = -1", True), ("axis = [1, 2]", False), ("", False)])
def test_unbiased(op, axis, keepdims):
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    red(op, "tensor<2x3x4x5xf32>", attrs(axis, keepdims, False, ["unbiased = true"]), inputs=[x], rtol=1e-4)


@pytest.mark.parametrize("op", ["variance", "std"])
@pytest.mark.parametrize("axis,mshape", [("axis = -1", "2x3x4x1"), ("axis = [1, 3]", "4x1"),
                                         ("axis = [0, 1, 2, 3]", "1"), ("axis = [0, 2]", "1x3x1x5")])
def test_given_mean(op, axis, mshape):
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    m = rng.standard_normal([int(d) for d in mshape.split("x")]).astype(np.float32)
    check(prim([("x", "tensor<2x3x4x5xf32>"), ("m", f"tensor<{mshape}xf32>")],
               [f"%r = {op}(%x, %m) {{{axis}}}"]), inputs=[x, m], rtol=1e-4)


def test_f64():
    x = rng.standard_normal((3, 7)).astype(np.float64)
    for op in ("sum", "mean", "logsumexp", "std", "argmax"):
        red(op, "tensor<3x7xf64>", " {axis = 1}", inputs=[x], rtol=1e-10, atol=1e-12)


def test_f16():
    x = rng.standard_normal((3, 16)).astype(np.float16)
    for op in ("sum", "max", "argmax", "mean"):
        red(op, "tensor<3x16xf16>", " {axis = 1}", inputs=[x], rtol=2e-3, atol=2e-3)


def test_wide_vectorized_reduce():
    # a last axis of 16 kept: the default schedule vectorizes the reduction's output axis
    x = rng.standard_normal((2, 9, 16)).astype(np.float32)
    for op in ("sum", "argmax", "logsumexp", "variance"):
        red(op, "tensor<2x9x16xf32>", " {axis = 1}", inputs=[x], rtol=1e-4, atol=1e-5)


def test_reduce_after_elementwise():
    check(prim([("x", "tensor<4x16xf32>"), ("y", "tensor<16xf32>")],
               ["%a = multiply(%x, %y)", "%s = sum(%a) {axis = 1, keepdims = true}", "%r = subtract(%x, %s)"]))


def test_splat_constant_input():
    check(prim([], ["%c = constant dense<2.0> : tensor<3x4xf32>", "%r = sum(%c) {axis = 1}"]))


# -- coverage: every elementwise and reduce relay op has a TE compute ------------------------------

def test_every_elemwise_and_reduce_op_has_a_compute():
    from tvmd.conversion.relay_to_te.strategies import STRATEGIES
    from tvmd.ir.core import OP_CLASSES
    from tvmd.ir.registry import load_all_dialects
    load_all_dialects()
    ops = sorted(n.split(".", 1)[1] for n, c in OP_CLASSES.items()
                 if c.__module__.endswith(("ops.elemwise", "ops.reduce")))
    assert len(ops) > 70
    missing = [n for n in ops if n not in STRATEGIES]
    assert not missing, f"relay ops without a TE compute: {missing}"


@pytest.mark.skipif(not _have_cuda_compiler(), reason="no CUDA compiler (nvcc or NVRTC) on this machine")
def test_cuda_source_compiles():
    from test_topi_elemwise import cuda_compiles
    funcs = [([("x", "tensor<4x32xf32>")], f"%r = {op}(%x) {{{a}}}")
             for op in ["sum", "prod", "max", "min", "mean", "logsumexp", "variance", "std", "argmax", "argmin"]
             for a in ["axis = 1", "axis = 0, keepdims = true", "axis = [0, 1]"]]
    funcs += [([("x", "tensor<4x32xi1>")], f"%r = {op}(%x) {{axis = 0}}") for op in ["all", "any", "sum", "min"]]
    funcs += [([("x", "tensor<4x32xui8>")], f"%r = {op}(%x) {{axis = 1}}") for op in ["max", "argmin", "mean"]]
    funcs += [([("x", "tensor<4x32xf32>"), ("m", "tensor<4x1xf32>")], "%r = variance(%x, %m) {axis = 1}")]
    cuda_compiles(funcs)
