"""The 8- and 4-bit float types (ir/minifloat.py) through compiled code and the
interpreter: casts bit-exact against ml_dtypes (numpy's float8 dtypes,
ONNX's reference) and torch's float8 types, on scalars and vectorized
loops, from f16 / f32 / f64 / integers; arithmetic on f8 operands in f32;
the types in the text."""

import ml_dtypes
import numpy as np
import pytest

from tvmd.ir import types as T
from tvmd.ir.minifloat import FORMATS
from tvmd.runtime.build import build

KINDS = sorted(FORMATS)


def f8_values(fmt):
    """Every value of the format (NaNs included), as float32."""
    return np.arange(1 << (1 + fmt.ebits + fmt.mbits), dtype=np.uint8).view(fmt.numpy_dtype()).astype(np.float32)


def hard_f32(fmt, seed=0):
    """Values where rounding to `fmt` is decided: every value, the midpoints
    between neighbours (ties to even), one f32 ulp either side of each,
    past the largest finite value, the specials, and random magnitudes."""
    v = np.unique(np.abs(f8_values(fmt)[np.isfinite(f8_values(fmt))]))
    mids = (v[:-1] + v[1:]) / 2
    top = np.array([fmt.max_value * k for k in (1.0, 1.03, 1.0625, 1.07, 1.5, 4.0)], np.float32)
    edges = np.concatenate([v, mids, top, [v[1] / 2, v[1] / 3, v[1] / 4, 1e-30, 1e-45]]).astype(np.float32)
    near = np.concatenate([edges, np.nextafter(edges, np.float32(np.inf)), np.nextafter(edges, np.float32(0))])
    rng = np.random.default_rng(seed)
    rand = (rng.standard_normal(2000) * 10.0 ** rng.uniform(-8, 6, 2000)).astype(np.float32)
    special = np.array([np.inf, np.nan, 3e38], np.float32)
    x = np.concatenate([near, rand, special])
    return np.concatenate([x, -x])


def cast_pair(n, src, fmt_kind, dst):
    return f"""relay.func @main(%x: tensor<{n}x{src}>) -> (tensor<{n}x{fmt_kind}>, tensor<{n}x{dst}>) {{
  %a = cast(%x) {{dtype = "{T.tvm_dtype_name(T.parse_type(fmt_kind))}"}} : tensor<{n}x{fmt_kind}>
  %b = cast(%a) {{dtype = "{T.tvm_dtype_name(T.parse_type(dst))}"}} : tensor<{n}x{dst}>
  return %a, %b
}}"""


def bits(a):
    return a.view(np.uint8)


def same_values(got, want):
    """Equal, NaN matching NaN (a NaN's payload is not compared)."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(w))
    np.testing.assert_array_equal(g[~np.isnan(g)], w[~np.isnan(w)])
    np.testing.assert_array_equal(np.signbit(g[~np.isnan(g)]), np.signbit(w[~np.isnan(w)]))


@pytest.mark.parametrize("kind", KINDS)
def test_f32_round_trip_is_bit_exact_against_ml_dtypes(kind):
    fmt = FORMATS[kind]
    x = hard_f32(fmt)
    a, b = build(cast_pair(len(x), "f32", kind, "f32"), fallback=False).run(x)
    want = x.astype(fmt.numpy_dtype())
    assert a.dtype == fmt.numpy_dtype()
    keep = ~np.isnan(x) if fmt.specials == "none" else np.ones(len(x), bool)
    np.testing.assert_array_equal(bits(a)[keep], bits(want)[keep])     # a NaN keeps its sign
    if fmt.specials == "none":    # no NaN in the format: zero (ml_dtypes' zero has the other sign)
        assert (a[~keep].astype(np.float32) == 0).all()
    same_values(b[keep], want.astype(np.float32)[keep])


@pytest.mark.parametrize("kind", KINDS)
def test_every_value_of_f16_and_every_code_decodes(kind):
    fmt = FORMATS[kind]
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    if fmt.specials == "none":
        x = x[~np.isnan(x)]    # no NaN in the format (test_f32_round_trip checks it becomes 0)
    a, b = build(cast_pair(len(x), "f16", kind, "f16"), fallback=False).run(x)
    same_values(a.astype(np.float32), x.astype(fmt.numpy_dtype()).astype(np.float32))
    same_values(b, x.astype(fmt.numpy_dtype()).astype(np.float16))
    n = 1 << (1 + fmt.ebits + fmt.mbits)     # every code (a 4-bit one in the low bits of its byte)
    codes = np.arange(n, dtype=np.uint8).view(fmt.numpy_dtype())
    text = f"""relay.func @main(%x: tensor<{n}x{kind}>) -> tensor<{n}xf64> {{
  %a = cast(%x) {{dtype = "float64"}} : tensor<{n}xf64>
  return %a
}}"""
    same_values(build(text, fallback=False).run(codes), codes.astype(np.float64))


@pytest.mark.parametrize("kind", KINDS)
def test_f64_and_integer_sources_round_once(kind):
    fmt = FORMATS[kind]
    v = np.unique(np.abs(f8_values(fmt)[np.isfinite(f8_values(fmt))])).astype(np.float64)
    mids = (v[:-1] + v[1:]) / 2
    # just above a midpoint by less than an f32 ulp: through f32 it would tie and round to even
    x = np.concatenate([mids + mids * 2.0 ** -40, mids - mids * 2.0 ** -40, v])
    a, _ = build(cast_pair(len(x), "f64", kind, "f32"), fallback=False).run(x)
    same_values(a.astype(np.float64), np.concatenate([v[1:], v[:-1], v]))
    ints = np.arange(-70000, 70000, 37, dtype=np.int32)
    a, back = build(cast_pair(len(ints), "i32", kind, "i32"), fallback=False).run(ints)
    want = ints.astype(np.float64).astype(fmt.numpy_dtype())
    same_values(a.astype(np.float32), want.astype(np.float32))
    finite = np.isfinite(want.astype(np.float32))
    np.testing.assert_array_equal(back[finite], want.astype(np.float32)[finite].astype(np.int32))


def test_f8_to_f8_and_bf16():
    x = hard_f32(FORMATS["f8E5M2"])
    for src, dst in (("f8E5M2", "f8E4M3FN"), ("f8E4M3FN", "f8E5M2FNUZ"), ("f8E4M3FNUZ", "bf16")):
        text = f"""relay.func @main(%x: tensor<{len(x)}xf32>) -> tensor<{len(x)}x{dst}> {{
  %a = cast(%x) {{dtype = "{T.tvm_dtype_name(T.parse_type(src))}"}} : tensor<{len(x)}x{src}>
  %b = cast(%a) {{dtype = "{T.tvm_dtype_name(T.parse_type(dst))}"}} : tensor<{len(x)}x{dst}>
  return %b
}}"""
        got = build(text, fallback=False).run(x)
        mid = x.astype(FORMATS[src].numpy_dtype())
        if dst == "bf16":    # bf16 buffers are the raw bits (uint16)
            want = mid.astype(ml_dtypes.bfloat16).view(np.uint16)
            nan = np.isnan(mid.astype(np.float32))
            np.testing.assert_array_equal(got[~nan], want[~nan])
        else:
            same_values(got.astype(np.float32), mid.astype(FORMATS[dst].numpy_dtype()).astype(np.float32))


@pytest.mark.parametrize("mode", ["compiled", "interpreter"])
def test_arithmetic_on_f8_operands_rounds_the_f32_result(mode):
    n = 1000
    rng = np.random.default_rng(3)
    dt = FORMATS["f8E4M3FN"].numpy_dtype()
    a = (rng.standard_normal(n) * 20).astype(dt)
    b = (rng.standard_normal(n) * 20).astype(dt)
    text = f"""relay.func @main(%a: tensor<{n}xf8E4M3FN>, %b: tensor<{n}xf8E4M3FN>) -> (tensor<{n}xf8E4M3FN>, tensor<{n}xi1>) {{
  %s = multiply(%a, %b) : tensor<{n}xf8E4M3FN>
  %c = less(%a, %b) : tensor<{n}xi1>
  return %s, %c
}}"""
    if mode == "compiled":
        s, c = build(text, fallback=False).run(a, b)
    else:
        from tvmd.dialects.relay.interpreter import Interpreter
        from tvmd.parser import parse_module
        interp = Interpreter(parse_module(text, "t.relay"))
        s, c = interp.call(interp.functions["main"], [a, b], None)
    same_values(np.asarray(s).astype(np.float32),
                (a.astype(np.float32) * b.astype(np.float32)).astype(dt).astype(np.float32))
    np.testing.assert_array_equal(c, a.astype(np.float32) < b.astype(np.float32))


def test_casts_agree_with_torch():
    torch = pytest.importorskip("torch")
    kinds = {"f8E4M3FN": torch.float8_e4m3fn, "f8E5M2": torch.float8_e5m2,
             "f8E4M3FNUZ": torch.float8_e4m3fnuz, "f8E5M2FNUZ": torch.float8_e5m2fnuz}
    for kind, tdt in kinds.items():
        fmt = FORMATS[kind]
        x = hard_f32(fmt, seed=1)
        x = x[np.abs(x) <= fmt.max_value]   # torch saturates nothing and differs past the top
        a, _ = build(cast_pair(len(x), "f32", kind, "f32"), fallback=False).run(x)
        want = torch.from_numpy(x).to(tdt).view(torch.uint8).numpy()
        nan = np.isnan(x)
        np.testing.assert_array_equal(bits(a)[~nan], want[~nan])


def test_types_in_text_and_numpy():
    for kind, fmt in FORMATS.items():
        t = T.parse_type(f"tensor<2x?x{kind}>")
        assert str(t) == f"tensor<2x?x{kind}>"
        assert T.is_minifloat(t.element_type) and t.element_type.width == 1 + fmt.ebits + fmt.mbits
        assert T.storage_numpy_dtype(t.element_type) == fmt.numpy_dtype()
        assert T.from_numpy_dtype(fmt.numpy_dtype()) is t.element_type
        assert T.from_dtype_name(fmt.numpy_name) is t.element_type
        assert float(np.array(fmt.max_value, np.float32).astype(fmt.numpy_dtype())) == fmt.max_value
        assert float(ml_dtypes.finfo(fmt.numpy_dtype()).max) == fmt.max_value
