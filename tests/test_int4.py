"""4- and 2-bit integers (i4 ui4 i2 ui2): a byte per element in memory,
the value in its low bits (ml_dtypes' layout, which ONNX's arrays use);
compiled casts and arithmetic against ml_dtypes / numpy, scalar loops and
vectorized ones, and qnn.quantize to int4 against the formula."""

import ml_dtypes
import numpy as np
import pytest

from tvmd.ir import types as T
from tvmd.runtime.build import build

TYPES = {"i4": ml_dtypes.int4, "ui4": ml_dtypes.uint4, "i2": ml_dtypes.int2, "ui2": ml_dtypes.uint2}


def floats(n):
    x = np.concatenate([np.arange(-20, 20, 0.25), [np.nan, np.inf, -np.inf, 1e10, -1e10, 7.99, -8.01, 0.5, -0.5]])
    return np.resize(x.astype(np.float32), n)


@pytest.mark.parametrize("it", sorted(TYPES))
@pytest.mark.parametrize("n", [7, 1024])     # a scalar loop; a vectorized one
def test_casts_match_ml_dtypes(it, n):
    name = T.tvm_dtype_name(T.parse_type(it))
    dt = np.dtype(TYPES[it])
    x = floats(n)
    text = f"""relay.func @main(%x: tensor<{n}xf32>, %i: tensor<{n}xi32>) -> (tensor<{n}x{it}>, tensor<{n}xf32>, tensor<{n}x{it}>, tensor<{n}xi32>) {{
  %a = cast(%x) {{dtype = "{name}"}} : tensor<{n}x{it}>
  %b = cast(%a) {{dtype = "float32"}} : tensor<{n}xf32>
  %c = cast(%i) {{dtype = "{name}"}} : tensor<{n}x{it}>
  %d = cast(%c) {{dtype = "int32"}} : tensor<{n}xi32>
  return %a, %b, %c, %d
}}"""
    ints = np.resize(np.arange(-40, 40, dtype=np.int32), n)
    a, b, c, d = build(text, fallback=False).run(x, ints)
    with np.errstate(invalid="ignore"):
        wa = x.astype(dt)     # out of range or NaN: 0
    wc = ints.astype(dt)      # integers wrap
    assert a.dtype == dt and c.dtype == dt
    np.testing.assert_array_equal(a.view(np.uint8), wa.view(np.uint8))     # the upper bits are zero too
    np.testing.assert_array_equal(b, wa.astype(np.float32))
    np.testing.assert_array_equal(c.view(np.uint8), wc.view(np.uint8))
    np.testing.assert_array_equal(d, wc.astype(np.int32))


@pytest.mark.parametrize("n", [5, 1000])
def test_arithmetic_wraps_in_four_bits(n):
    rng = np.random.default_rng(0)
    a = rng.integers(-8, 8, n).astype(ml_dtypes.int4)
    b = rng.integers(-8, 8, n).astype(ml_dtypes.int4)
    text = f"""relay.func @main(%a: tensor<{n}xi4>, %b: tensor<{n}xi4>) -> (tensor<{n}xi4>, tensor<{n}xi1>, tensor<{n}xi4>) {{
  %s = add(%a, %b) : tensor<{n}xi4>
  %c = less(%a, %b) : tensor<{n}xi1>
  %m = maximum(%a, %b) : tensor<{n}xi4>
  return %s, %c, %m
}}"""
    s, c, m = build(text, fallback=False).run(a, b)
    ai, bi = a.astype(np.int32), b.astype(np.int32)
    np.testing.assert_array_equal(s.astype(np.int32), (ai + bi).astype(ml_dtypes.int4).astype(np.int32))
    np.testing.assert_array_equal(c, ai < bi)
    np.testing.assert_array_equal(m.astype(np.int32), np.maximum(ai, bi))


@pytest.mark.parametrize("out", ["int4", "uint4"])
def test_quantize_to_int4_rounds_half_even_and_saturates(out):
    n = 40
    x = np.linspace(-12, 12, n).astype(np.float32)
    it = T.from_dtype_name(out)
    text = f"""relay.func @main(%x: tensor<{n}xf32>) -> tensor<{n}x{it}> {{
  %s = constant dense<0.5> : tensor<f32>
  %z = constant dense<1> : tensor<i32>
  %q = qnn.quantize(%x, %s, %z) {{out_dtype = "{out}"}} : tensor<{n}x{it}>
  return %q
}}"""
    got = build(text, fallback=False).run(x)
    info = ml_dtypes.iinfo(getattr(ml_dtypes, out))
    want = np.clip(np.rint(x / np.float32(0.5)) + 1, info.min, info.max)
    np.testing.assert_array_equal(got.astype(np.int32), want.astype(np.int32))


@pytest.mark.parametrize("dt, tp, vals", [(ml_dtypes.int4, 22, [1, -2, 3, 0, 7, -8, 1]),
                                          (ml_dtypes.uint4, 21, [1, 2, 3, 0, 7, 15, 9]),
                                          (ml_dtypes.int2, 26, [1, -2, 0, -1, 1, 0, -2]),
                                          (ml_dtypes.float8_e4m3fn, 17, [1.5, -2, 3, 0.25, 7, -8, 448]),
                                          (ml_dtypes.float8_e5m2fnuz, 20, [1.5, -2, 3, 0.25, 7, -8, 1e-5])])
@pytest.mark.parametrize("mode", ["compiled", "interpreter"])
def test_onnx_initializers_of_narrow_types(dt, tp, vals, mode):
    """ONNX packs int4 two to a byte and int2 four (an odd count leaves a
    half byte); the importer reads them through onnx.numpy_helper."""
    onnx = pytest.importorskip("onnx")
    from onnx import helper, numpy_helper
    from tvmd.frontend import onnx_backend
    w = np.array(vals, np.float32).astype(dt)
    init = numpy_helper.from_array(w, "w")
    assert init.data_type == tp
    g = helper.make_graph([helper.make_node("Cast", ["w"], ["c"], to=onnx.TensorProto.FLOAT),
                           helper.make_node("Add", ["c", "x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [7])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [7])], [init])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    x = np.arange(7, dtype=np.float32)
    out = onnx_backend.prepare(m, mode=mode).run([x])[0]
    np.testing.assert_array_equal(out, w.astype(np.float32) + x)
