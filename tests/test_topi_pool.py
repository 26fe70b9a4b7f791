"""TE computes of relay's pools (conversion/relay_to_te/topi_pool.py) against
the ops' numpy compute(): unscheduled, default-scheduled, and compiled by
LLVM (tests/topi_check.py)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from topi_check import check, prim  # noqa: E402


def one(x, expr):
    return prim([("x", x)], ["%r = " + expr])


WINDOW = [
    ("2d-plain", "tensor<1x2x6x6xf32>", "{pool_size = [2, 2], strides = [2, 2]}", "tensor<1x2x3x3xf32>"),
    ("2d-pad", "tensor<1x2x5x5xf32>", "{pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1]}",
     "tensor<1x2x3x3xf32>"),
    ("2d-ceil", "tensor<1x1x6x7xf32>", "{pool_size = [3, 2], strides = [2, 2], padding = [0, 1, 0, 0], "
     "ceil_mode = true}", "tensor<1x1x3x4xf32>"),
    ("2d-dilation-nhwc", "tensor<1x7x6x3xf32>", "{pool_size = [2, 2], dilation = [2, 1], padding = [1, 0, 0, 1], "
     "layout = \"NHWC\"}", "tensor<1x6x6x3xf32>"),
    ("2d-blocked", "tensor<1x2x4x4x4xf32>", "{pool_size = [2, 2], layout = \"NCHW4c\"}", "tensor<1x2x3x3x4xf32>"),
    ("2d-out-layout", "tensor<1x3x4x4xf32>", "{pool_size = [2, 2], strides = [2, 2], out_layout = \"NHWC\"}",
     "tensor<1x2x2x3xf32>"),
    ("1d", "tensor<2x3x9xf32>", "{pool_size = [3], strides = [2], padding = [1, 2], ceil_mode = true}",
     "tensor<2x3x5xf32>"),
    ("3d", "tensor<1x2x4x5x4xf32>", "{pool_size = [2, 3, 2], strides = [2, 1, 2], padding = [0, 1, 1, 1, 1, 0]}",
     "tensor<1x2x2x5x2xf32>"),
    ("3d-ndhwc", "tensor<1x4x4x3x2xf32>", "{pool_size = [2, 2, 2], layout = \"NDHWC\"}", "tensor<1x3x3x2x2xf32>"),
]


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("name,x,attrs,t", WINDOW, ids=[w[0] for w in WINDOW])
def test_window_pool(kind, name, x, attrs, t):
    nd = 1 if name.startswith("1d") else 3 if name.startswith("3d") else 2
    check(one(x, f"nn.{kind}_pool{nd}d(%x) {attrs} : {t}"))


PADDED = [w for w in WINDOW if "padding" in w[2]]


@pytest.mark.parametrize("name,x,attrs,t", PADDED, ids=[w[0] for w in PADDED])
def test_avg_pool_count_include_pad(name, x, attrs, t):
    nd = 1 if name.startswith("1d") else 3 if name.startswith("3d") else 2
    check(one(x, f"nn.avg_pool{nd}d(%x) {attrs[:-1]}, count_include_pad = true}} : {t}"))


@pytest.mark.parametrize("dtype", ["i8", "i32"])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_integer_pools(kind, dtype):
    """int8 max pads with -128; int averages truncate toward zero."""
    check(one(f"tensor<1x2x5x5x{dtype}>",
              f"nn.{kind}_pool2d(%x) {{pool_size = [3, 3], padding = [1, 1, 1, 1]}} : tensor<1x2x5x5x{dtype}>"))


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("layout,x,t", [("NCHW", "2x3x5x4", "2x3x1x1"), ("NHWC", "1x5x4x3", "1x1x1x3")])
def test_global_pool(kind, layout, x, t):
    check(one(f"tensor<{x}xf32>", f"nn.global_{kind}_pool2d(%x) {{layout = \"{layout}\"}} : tensor<{t}xf32>"))


ADAPTIVE = [
    ("1d", "tensor<2x3x7xf32>", "{output_size = [3]}", "tensor<2x3x3xf32>"),
    ("2d", "tensor<1x2x7x5xf32>", "{output_size = [3, 2]}", "tensor<1x2x3x2xf32>"),
    ("2d-even", "tensor<1x2x6x4xf32>", "{output_size = [3, 2]}", "tensor<1x2x3x2xf32>"),
    ("2d-nhwc-one", "tensor<1x5x5x2xf32>", "{output_size = [4], layout = \"NHWC\"}", "tensor<1x4x4x2xf32>"),
    ("2d-grow", "tensor<1x1x3x3xf32>", "{output_size = [5, 4]}", "tensor<1x1x5x4xf32>"),
    ("3d", "tensor<1x2x5x4x3xf32>", "{output_size = [2, 3, 2]}", "tensor<1x2x2x3x2xf32>"),
]


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("name,x,attrs,t", ADAPTIVE, ids=[a[0] for a in ADAPTIVE])
def test_adaptive_pool(kind, name, x, attrs, t):
    check(one(x, f"nn.adaptive_{kind}_pool{name[0]}d(%x) {attrs} : {t}"))


def test_adaptive_avg_int():
    check(one("tensor<1x2x7x5xi32>", "nn.adaptive_avg_pool2d(%x) {output_size = [3, 2]} : tensor<1x2x3x2xi32>"))
