"""reinterpret (ONNX BitCast): compiled, the bits equal numpy's view of the
same buffer; bool pairs with the 8-bit types; other widths are refused."""

import numpy as np
import pytest

from tvmd.ir.diagnostics import DiagnosticError
from tvmd.parser import parse_module
from tvmd.runtime.build import build

PAIRS = [("float32", "int32"), ("int32", "float32"), ("float16", "uint16"), ("int64", "float64"),
         ("uint8", "int8"), ("float64", "uint64")]
SHORT = {"float32": "f32", "int32": "i32", "float16": "f16", "uint16": "ui16", "int64": "i64", "float64": "f64",
         "uint8": "ui8", "int8": "i8", "uint64": "ui64", "bool": "i1"}


@pytest.mark.parametrize("src,dst", PAIRS)
def test_compiled_bits_equal_numpy_view(src, dst):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 255, 64, dtype=np.uint8).view(np.dtype(src))   # any bit pattern, NaNs included
    n = x.shape[0]
    cm = build(f"""relay.func @main(%x: tensor<{n}x{SHORT[src]}>) {{
  %y = reinterpret(%x) {{dtype = "{dst}"}}
  return %y
}}""", fallback=False)
    got = cm.run(x)
    assert got.dtype == np.dtype(dst) and got.tobytes() == x.tobytes()


def test_bool_and_bytes():
    cm = build("""relay.func @main(%b: tensor<3xi1>, %u: tensor<3xui8>) {
  %c = reinterpret(%b) {dtype = "uint8"}
  %d = reinterpret(%u) {dtype = "bool"}
  %t = tuple(%c, %d)
  return %t
}""", fallback=False)
    c, d = cm.run(np.array([True, False, True]), np.array([0, 1, 2], np.uint8))
    assert c.tolist() == [1, 0, 1] and d.tolist() == [False, True, True]


def test_other_widths_are_refused():
    with pytest.raises(DiagnosticError, match="one bit width, got f32 to i64"):
        parse_module('relay.func @main(%x: tensor<2xf32>) {\n  %y = reinterpret(%x) {dtype = "int64"}\n  return %y\n}')
