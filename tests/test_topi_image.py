"""TE computes of relay's resizes (conversion/relay_to_te/topi_image.py)
against the ops' numpy compute(): unscheduled, default-scheduled, and
compiled by LLVM (tests/topi_check.py)."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from topi_check import check, prim  # noqa: E402

MODES = ["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn",
         "half_pixel_symmetric", "tf_crop_and_resize"]


def resize2d(x, size, t, **attrs):
    a = ", ".join([f"size = [{size[0]}, {size[1]}]"] +
                  [f"{k} = {v}" if not isinstance(v, str) else f'{k} = "{v}"' for k, v in attrs.items()])
    return prim([("x", x)], [f"%r = image.resize2d(%x) {{{a}}} : {t}"])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("method", ["nearest_neighbor", "linear", "cubic"])
def test_resize2d_modes(method, mode):
    roi = {"roi": "ROI"} if mode == "tf_crop_and_resize" else {}
    text = resize2d("tensor<1x2x4x5xf32>", (7, 3), "tensor<1x2x7x3xf32>", method=method,
                    coordinate_transformation_mode=mode, extrapolation_value=-1.0, **roi)
    check(text.replace('"ROI"', "[0.1, 0.2, 0.9, 1.2]"))


@pytest.mark.parametrize("rounding", ["round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
def test_resize_nearest_rounding(rounding):
    # 4 -> 8 with asymmetric puts coordinates on exact halves: the rounding decides
    check(resize2d("tensor<1x1x4x4xf32>", (8, 6), "tensor<1x1x8x6xf32>", method="nearest_neighbor",
                   coordinate_transformation_mode="asymmetric", rounding_method=rounding))


def test_resize_cubic_exclude_alpha():
    check(resize2d("tensor<1x1x5x4xf32>", (8, 7), "tensor<1x1x8x7xf32>", method="cubic",
                   cubic_alpha=-0.75, cubic_exclude=1))


def test_resize_nhwc_scales_int():
    check(prim([("x", "tensor<1x3x4x2xi32>")],
               ['%r = image.resize2d(%x) {size = [5, 8], layout = "NHWC", method = "linear", '
                'scales = [1.5, 2.0]} : tensor<1x5x8x2xi32>']))


def test_resize_uint8_out_f32():
    check(prim([("x", "tensor<1x2x3x3xui8>")],
               ['%r = image.resize2d(%x) {size = [4, 5], out_dtype = "float32"} : tensor<1x2x4x5xf32>']))


def test_resize_blocked_layout():
    check(prim([("x", "tensor<1x1x3x3x4xf32>")],
               ['%r = image.resize2d(%x) {size = [5, 4], layout = "NCHW4c"} : tensor<1x1x5x4x4xf32>']))


@pytest.mark.parametrize("method", ["nearest_neighbor", "linear", "cubic"])
def test_resize1d(method):
    check(prim([("x", "tensor<2x3x6xf32>")],
               [f'%r = image.resize1d(%x) {{size = [4], method = "{method}", '
                f'coordinate_transformation_mode = "align_corners"}} : tensor<2x3x4xf32>']))


@pytest.mark.parametrize("method", ["nearest_neighbor", "linear", "cubic"])
def test_resize3d(method):
    check(prim([("x", "tensor<1x1x3x2x3xf32>")],
               [f'%r = image.resize3d(%x) {{size = [4, 3, 2], method = "{method}"}} : tensor<1x1x4x3x2xf32>']))


@pytest.mark.parametrize("method,align", [("nearest_neighbor", "false"), ("bilinear", "false"),
                                          ("bilinear", "true"), ("bicubic", "false")])
def test_upsampling(method, align):
    check(prim([("x", "tensor<1x2x3x4xf32>")],
               [f'%r = nn.upsampling(%x) {{scale_h = 2.0, scale_w = 1.5, method = "{method}", '
                f'align_corners = {align}}} : tensor<1x2x6x6xf32>']))


@pytest.mark.parametrize("method", ["nearest_neighbor", "trilinear"])
def test_upsampling3d(method):
    check(prim([("x", "tensor<1x1x2x3x2xf32>")],
               [f'%r = nn.upsampling3d(%x) {{scale_d = 2.0, scale_h = 1.0, scale_w = 2.0, method = "{method}"}} '
                ': tensor<1x1x4x3x4xf32>']))


def test_resize_identity_is_exact():
    """Same size, half_pixel linear: every output is its input element."""
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)
    check(resize2d("tensor<1x1x3x4xf32>", (3, 4), "tensor<1x1x3x4xf32>"), inputs=[x], rtol=0, atol=0)
