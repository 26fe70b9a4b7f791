"""bf16 through compiled models: casts round to nearest even bit-exactly
(numpy reference on the float32 bits: numpy has no bfloat16), on every
CPU (LLVM's own fptrunc to bfloat is a call to compiler-rt's
__truncsfbf2 without AVX512-BF16, which the JIT cannot resolve); a bf16
product accumulating in f32 against numpy on the rounded operands;
bf16 buffers cross the runtime as uint16 bits."""

import numpy as np
import pytest

from tvmd.runtime.build import build
from tvmd.testing.bfloat16 import bits as bf16_bits
from tvmd.testing.bfloat16 import value as bf16_value


SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, -np.nan,
                    np.finfo(np.float32).max, -np.finfo(np.float32).max,    # round up to inf
                    np.finfo(np.float32).tiny, 1e-40, -1e-42,                # smallest normal, denormals
                    1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 1.0 + 2 ** -8 + 2 ** -20,  # ties to even, above a tie
                    3.14159265, 65504.0, 1e30], np.float32)


@pytest.mark.parametrize("opt_level", [0, 3])
def test_casts_round_to_nearest_even_bit_exactly(opt_level):
    rng = np.random.default_rng(0)
    n = 64
    x = np.concatenate([SPECIAL, (rng.standard_normal(n - len(SPECIAL)) * 10 ** rng.uniform(-6, 6, n - len(SPECIAL)))
                        .astype(np.float32)])
    x[-1] = np.frombuffer(np.uint32(0x7FA00001).tobytes(), np.float32)[0]   # a signalling NaN
    text = f"""relay.func @main(%x: tensor<{n}xf32>) -> (tensor<{n}xbf16>, tensor<{n}xf32>) {{
  %a = cast(%x) {{dtype = "bfloat16"}} : tensor<{n}xbf16>
  %b = cast(%a) {{dtype = "float32"}} : tensor<{n}xf32>
  return %a, %b
}}"""
    bits, back = build(text, fallback=False, opt_level=opt_level).run(x)
    want = bf16_bits(x)
    assert bits.dtype == np.uint16
    np.testing.assert_array_equal(bits, want)
    np.testing.assert_array_equal(back.view(np.uint32), bf16_value(want).view(np.uint32))


def test_bf16_dense_accumulates_in_f32():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 96)).astype(np.float32)
    w = rng.standard_normal((40, 96)).astype(np.float32)
    text = """relay.func @main(%x: tensor<5x96xf32>, %w: tensor<40x96xf32>) -> tensor<5x40xf32> {
  %a = cast(%x) {dtype = "bfloat16"} : tensor<5x96xbf16>
  %b = cast(%w) {dtype = "bfloat16"} : tensor<40x96xbf16>
  %d = nn.dense(%a, %b) {out_dtype = "float32"} : tensor<5x40xf32>
  return %d
}"""
    got = build(text, fallback=False).run(x, w)
    xa, wa = (bf16_value(bf16_bits(t)).astype(np.float64) for t in (x, w))
    np.testing.assert_allclose(got, xa @ wa.T, rtol=1e-5, atol=1e-4)


def test_interpreter_and_compiled_agree_with_ml_dtypes_on_bf16_arithmetic():
    """The interpreters compute bf16 as ml_dtypes' bfloat16 (each op in f32,
    rounded to bf16); both take and return the bits (uint16), as the
    compiled runtime does; a bf16 constant parses, prints and folds."""
    import ml_dtypes

    from tvmd.dialects.relay.interpreter import Interpreter
    from tvmd.ir.printer import print_module
    from tvmd.parser import parse_module
    text = """relay.func @main(%x: tensor<64xbf16>) -> tensor<64xbf16> {
  %c = constant dense<1.5> : tensor<bf16>
  %a = multiply(%x, %c) : tensor<64xbf16>
  %b = add(%a, %x) : tensor<64xbf16>
  %e = exp(%b) : tensor<64xbf16>
  return %e
}"""
    m = parse_module(text, "t.relay")
    assert "dense<1.5> : tensor<bf16>" in print_module(m)
    rng = np.random.default_rng(5)
    x = rng.standard_normal(64).astype(ml_dtypes.bfloat16)
    bits = x.view(np.uint16)
    interp = Interpreter(m)
    (got_i,) = interp.call(interp.functions["main"], [bits], None)
    got_c = build(text, fallback=False).run(bits)
    assert got_i.dtype == np.uint16 and got_c.dtype == np.uint16
    b = (x * ml_dtypes.bfloat16(1.5)).astype(ml_dtypes.bfloat16) + x
    want = np.exp(b.astype(np.float32)).astype(ml_dtypes.bfloat16).view(np.uint16)
    np.testing.assert_array_equal(got_i, want)
    # compiled: LLVM's exp in f32 may differ from numpy's by an f32 ulp, which can round to the next bf16
    np.testing.assert_allclose(bf16_value(got_c), bf16_value(want), rtol=2 ** -7)
