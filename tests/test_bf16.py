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
