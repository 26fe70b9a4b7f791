"""TE computes of relay's tensor creation, indexing, sorting and scan operators
(conversion/relay_to_te/topi_tensor.py), checked against each op's numpy
compute(): by the TE interpreter, scheduled, and compiled (topi_check)."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from topi_check import check, prim  # noqa: E402
from test_topi_transform import check_flat, one  # noqa: E402

from tvmd.conversion.relay_to_te.pass_ import lower_function  # noqa: E402
from tvmd.ir.diagnostics import DiagnosticError  # noqa: E402
from tvmd.parser import parse_module  # noqa: E402

DTYPES = {"i32": np.int32, "i64": np.int64, "f32": np.float32, "i8": np.int8, "ui8": np.uint8, "i1": np.bool_}


def ints(shape, low, high, dt="i32", seed=3):
    return np.random.default_rng(seed).integers(low, high, size=shape).astype(DTYPES[dt])


def floats(shape, seed=2):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def dims(s):
    return [int(d) for d in s.split("x")] if s else []


# -- creation -------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["zeros", "ones"])
@pytest.mark.parametrize("shape,dtype", [("[2, 3]", "float32"), ("[4]", "int64"), ("[3, 16]", "int8"),
                                         ("[]", "float32"), ("[2]", "bool")])
def test_zeros_ones(op, shape, dtype):
    check(prim([], [f'%r = {op}() {{shape = {shape}, dtype = "{dtype}"}}']))


@pytest.mark.parametrize("vt,attrs", [("tensor<f32>", "shape = [2, 3]"), ("tensor<1xi32>", 'shape = [4, 8]'),
                                      ("tensor<f32>", 'shape = [3], dtype = "int32"'),
                                      ("tensor<1x1xi64>", 'shape = [5], dtype = "float32"')])
def test_full(vt, attrs):
    check(one("full", vt, attrs=attrs))


def test_full_from_splat_constant():
    check(prim([], ["%v = constant dense<2.5> : tensor<f32>", "%r = full(%v) {shape = [2, 3]}"]))


@pytest.mark.parametrize("attrs", [
    "stop = 10.0", "start = 2.0, stop = 7.5, step = 0.5", "start = 5.0, stop = -3.0, step = -1.5",
    'start = 1.0, stop = 20.0, step = 3.0, dtype = "int32"', 'start = -4.0, stop = 4.0, dtype = "int64"',
    'start = 0.5, stop = 9.0, step = 2.0, dtype = "int32"',
])
def test_arange(attrs):
    check(prim([], [f"%r = arange() {{{attrs}}}"]))


@pytest.mark.parametrize("shape,dtype", [("2x3x4xf32", "int32"), ("7xi8", "int64"), ("1x5x1x2xf32", "int32")])
def test_shape_of(shape, dtype):
    check(one("shape_of", f"tensor<{shape}>", attrs=f'dtype = "{dtype}"'))


@pytest.mark.parametrize("shape,dtype", [("2x3x4xf32", "int32"), ("7xi8", "int64")])
def test_ndarray_size(shape, dtype):
    check(one("ndarray_size", f"tensor<{shape}>", attrs=f'dtype = "{dtype}"'))


# -- take ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["clip", "wrap", "fast"])
@pytest.mark.parametrize("xs,ishape,attrs", [
    ("4x5", "3", "axis = 0"), ("4x5", "2x3", "axis = 1"), ("4x5", "2x3", "axis = -1"), ("4x5", "6", ""),
    ("2x4x3", "2x5", "axis = 1, batch_dims = 1"), ("2x4x3", "2x5", "axis = -2, batch_dims = -1"),
    ("3x2x6", "3x2x4", "axis = 2, batch_dims = 2"), ("4x5", "", "axis = 1"),
])
@pytest.mark.parametrize("it", ["i32", "i64"])
def test_take(mode, xs, ishape, attrs, it):
    x = floats(dims(xs))
    if not attrs:
        n = x.size
    else:
        ax = [int(a.split("=")[1]) for a in attrs.split(", ") if a.startswith("axis")][0]
        n = x.shape[ax]
    lo, hi = (-n, n) if mode == "fast" else (-2 * n, 2 * n)
    i = ints(dims(ishape), lo, hi, it)
    sep = ", " if attrs else ""
    check(one("take", f"tensor<{xs}xf32>", f"tensor<{ishape + 'x' if ishape else ''}{it}>",
              attrs=f'{attrs}{sep}mode = "{mode}"'), inputs=[x, i])


def test_take_splat_index():
    check(prim([("x", "tensor<4x5xf32>")], ["%i = constant dense<-1> : tensor<i32>",
                                             '%r = take(%x, %i) {axis = 1, mode = "fast"}']))


# -- gather ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("xs,ishape,axis", [("4x5", "3x5", 0), ("4x5", "4x2", 1), ("4x5", "2x7", -1),
                                            ("3x4x2", "3x2x2", 1), ("6", "9", 0)])
@pytest.mark.parametrize("it", ["i32", "i64"])
def test_gather(xs, ishape, axis, it):
    x = floats(dims(xs))
    n = x.shape[axis]
    check(one("gather", f"tensor<{xs}xf32>", f"tensor<{ishape}x{it}>", attrs=f"axis = {axis}"),
          inputs=[x, ints(dims(ishape), -n, n, it)])


@pytest.mark.parametrize("xs,ishape,b", [("4x5x3", "2x6", 0), ("4x5x3", "1x2x3", 0), ("4x5x3", "3", 0),
                                         ("2x5x3", "1x2", 1), ("2x3x4x5", "2x2x3", 1), ("2x3x4", "1x2x3x2", 2)])
@pytest.mark.parametrize("it", ["i32", "i64"])
def test_gather_nd(xs, ishape, b, it):
    x = floats(dims(xs))
    ish = dims(ishape)
    rng = np.random.default_rng(4)
    rows = [rng.integers(-x.shape[b + k], x.shape[b + k], size=ish[1:]) for k in range(ish[0])]
    i = np.stack(rows).astype(DTYPES[it])
    check(one("gather_nd", f"tensor<{xs}xf32>", f"tensor<{ishape}x{it}>", attrs=f"batch_dims = {b}"), inputs=[x, i])


# -- one_hot --------------------------------------------------------------------------------------

@pytest.mark.parametrize("ishape,attrs", [
    ("4", "depth = 5"), ("2x3", "depth = 4, axis = 0"), ("2x3", "depth = 3, axis = 1"),
    ("2x3", 'depth = 6, axis = -1, dtype = "int32"'), ("", "depth = 3"),
])
@pytest.mark.parametrize("it", ["i32", "i64"])
def test_one_hot(ishape, attrs, it):
    i = ints(dims(ishape), -2, 7, it)
    check(one("one_hot", f"tensor<{ishape + 'x' if ishape else ''}{it}>", "tensor<f32>", "tensor<f32>", attrs=attrs),
          inputs=[i, np.float32(2.5).reshape(()), np.float32(-1).reshape(())])


def test_one_hot_splat_on_off():
    check(prim([("i", "tensor<5xi32>")], ["%on = constant dense<3> : tensor<i64>",
                                           "%off = constant dense<0> : tensor<i64>",
                                           "%r = one_hot(%i, %on, %off) {depth = 4}"]),
          inputs=[np.array([0, 3, 4, -1, 2], np.int32)])


# -- scatter ------------------------------------------------------------------------------------

@pytest.mark.parametrize("red", ["update", "add", "mul", "min", "max"])
@pytest.mark.parametrize("xs,ishape,axis", [("5x4", "3x4", 0), ("5x4", "5x3", 1), ("5x4", "2x3", -1),
                                            ("3x4x2", "3x6x2", 1), ("8", "12", 0)])
@pytest.mark.parametrize("it", ["i32", "i64"])
def test_scatter_elements(red, xs, ishape, axis, it):
    x = floats(dims(xs))
    n = x.shape[axis]
    i = ints(dims(ishape), -n, n, it)      # duplicates: the last update wins, reductions accumulate
    u = floats(dims(ishape), seed=5)
    check(one("scatter_elements", f"tensor<{xs}xf32>", f"tensor<{ishape}x{it}>", f"tensor<{ishape}xf32>",
              attrs=f'axis = {axis}, reduction = "{red}"'), inputs=[x, i, u], rtol=1e-4, atol=1e-4)


def test_scatter_elements_int_data():
    x, u = ints([6, 3], -9, 9, seed=1), ints([4, 3], -9, 9, seed=2)
    check(one("scatter_elements", "tensor<6x3xi32>", "tensor<4x3xi64>", "tensor<4x3xi32>",
              attrs='reduction = "add"'), inputs=[x, ints([4, 3], -6, 6, "i64"), u])


@pytest.mark.parametrize("mode", ["update", "add", "mul", "min", "max"])
@pytest.mark.parametrize("xs,ishape", [("6x4", "1x5"), ("6x4", "2x3"), ("6x4x2", "2x2x2"), ("6x4", "2"),
                                       ("5", "1x7")])
@pytest.mark.parametrize("it", ["i32", "i64"])
def test_scatter_nd(mode, xs, ishape, it):
    x = floats(dims(xs))
    ish = dims(ishape)
    m = ish[0]
    rng = np.random.default_rng(6)
    i = np.stack([rng.integers(-x.shape[k], x.shape[k], size=ish[1:]) for k in range(m)]).astype(DTYPES[it])
    ushape = ish[1:] + list(x.shape[m:])
    u = floats(ushape, seed=7)
    ut = "x".join(map(str, ushape)) + "x" if ushape else ""
    check(one("scatter_nd", f"tensor<{xs}xf32>", f"tensor<{ishape}x{it}>", f"tensor<{ut}f32>",
              attrs=f'mode = "{mode}"'), inputs=[x, i, u], rtol=1e-4, atol=1e-4)


# -- sorting -------------------------------------------------------------------------------------

def ties(shape, dt="f32", seed=8):
    """Values with many ties, to test stability."""
    v = np.random.default_rng(seed).integers(-3, 4, size=shape)
    return (v != 0) if dt == "i1" else v.astype(DTYPES[dt])


@pytest.mark.parametrize("op", ["sort", "argsort"])
@pytest.mark.parametrize("shape,axis", [("9", 0), ("4x6", -1), ("4x6", 0), ("2x5x3", 1)])
@pytest.mark.parametrize("ascend", ["true", "false"])
@pytest.mark.parametrize("dt", ["f32", "i32", "ui8", "i1"])
def test_sort(op, shape, axis, ascend, dt):
    dtype = ', dtype = "int64"' if op == "argsort" and dt == "i32" else ""
    check(one(op, f"tensor<{shape}x{dt}>", attrs=f"axis = {axis}, is_ascend = {ascend}{dtype}"),
          inputs=[ties(dims(shape), dt)])


def test_sort_random_floats():
    check(one("sort", "tensor<3x16xf32>", attrs="is_ascend = false"))


@pytest.mark.parametrize("ret", ["values", "indices"])
@pytest.mark.parametrize("shape,attrs", [
    ("10", "k = 3"), ("4x6", "k = 2, axis = 0"), ("4x6", "k = 0, is_ascend = true"),
    ("2x5x3", 'k = 5, axis = 1, dtype = "int64"'), ("4x6", "k = 1, axis = -1"),
])
def test_topk(ret, shape, attrs):
    check(one("topk", f"tensor<{shape}xf32>", attrs=f'{attrs}, ret_type = "{ret}"'), inputs=[ties(dims(shape))])


@pytest.mark.parametrize("attrs", ["k = 2", "k = 3, axis = 0, is_ascend = true"])
def test_topk_both(attrs):
    tf = check_flat(one("topk", "tensor<4x6xi32>", attrs=attrs))
    assert len(tf.function_type.results) == 2


def test_topk_items():
    check(prim([("x", "tensor<3x8xf32>")], ["%t = topk(%x) {k = 3}", "%v = get_item(%t) {index = 0}",
                                             "%i = get_item(%t) {index = 1}"], ret="%v, %i"))


# -- scans ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("shape,attrs", [("8", ""), ("3x4", "axis = 1"), ("3x4", "axis = 0, exclusive = true"),
                                         ("2x3x4", "axis = -2"), ("2x3x4", ""), ("2x3", "exclusive = true"),
                                         ("3x4", 'axis = 1, dtype = "float32"')])
@pytest.mark.parametrize("dt", ["f32", "i32"])
def test_cumulative(op, shape, attrs, dt):
    x = ints(dims(shape), -3, 4, dt) if dt == "i32" else (floats(dims(shape)) * 0.5 + 1).astype(np.float32)
    check(one(op, f"tensor<{shape}x{dt}>", attrs=attrs), inputs=[x], rtol=1e-4, atol=1e-4)


def test_cumsum_widening_dtype():
    check(one("cumsum", "tensor<4x5xi8>", attrs='axis = 1, dtype = "int64"'), inputs=[ints([4, 5], -128, 127, "i8")])


def test_cumsum_bool():
    check(one("cumsum", "tensor<9xi1>", attrs='dtype = "int32"'), inputs=[ties([9], "i1")])


# -- data-dependent shapes ------------------------------------------------------------------------

def test_argwhere_is_a_diagnostic():
    m = parse_module(one("argwhere", "tensor<3x4xf32>"))
    with pytest.raises(DiagnosticError, match="depends on the data"):
        lower_function(m, m.body.first)


# -- coverage --------------------------------------------------------------------------------------

DATA_DEPENDENT = {"argwhere"}


def test_every_transform_and_tensor_op_has_a_strategy():
    from tvmd.conversion.relay_to_te.strategies import STRATEGIES
    from tvmd.ir.core import OP_CLASSES
    from tvmd.ir.registry import load_all_dialects
    load_all_dialects()
    names = sorted(n.split(".", 1)[1] for n, c in OP_CLASSES.items()
                   if c.__module__.endswith(("ops.transform", "ops.tensor")))
    assert len(names) >= 35
    missing = [n for n in names if n not in STRATEGIES]
    assert missing == []
    assert DATA_DEPENDENT <= set(names)
