"""Resizing against onnxruntime's Resize (the ONNX frontend maps to these
ops, so the numerics must be ONNX's): every coordinate transformation
mode, nearest rounding modes, linear, cubic (alpha, exclude),
tf_crop_and_resize with extrapolation, up and down, 1-d/2-d/3-d, NHWC;
nn.upsampling; types and errors."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from relay_ops_helpers import close, infer, ort_run, rand, run, run_text, tt, type_error  # noqa: E402

MODES = ["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn"]
SIZES = [(7, 10), (3, 2), (1, 5)]


def ort_resize(x, sizes, mode, coord, **attrs):
    return ort_run("Resize", [x, None, None, np.array(x.shape[:2] + tuple(sizes), np.int64)], mode=mode,
                   coordinate_transformation_mode=coord, **attrs)


@pytest.mark.parametrize("coord", MODES)
@pytest.mark.parametrize("size", SIZES, ids=str)
def test_linear(coord, size):
    if coord == "tf_half_pixel_for_nn":
        pytest.skip("ONNX defines tf_half_pixel_for_nn for nearest only")
    x = rand(1, 2, 4, 5)
    close(run("image.resize2d", x, size=size, method="linear", coordinate_transformation_mode=coord),
          ort_resize(x, size, "linear", coord), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("coord", MODES)
@pytest.mark.parametrize("rounding", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
def test_nearest(coord, rounding):
    x = rand(1, 2, 4, 5)
    for size in SIZES:
        if coord == "tf_half_pixel_for_nn" and "ceil" in rounding and size[1] == 5:
            continue   # onnxruntime copies an axis of scale 1 (x + 0.5 would round up to x + 1)
        close(run("image.resize2d", x, size=size, method="nearest_neighbor", coordinate_transformation_mode=coord,
                  rounding_method=rounding),
              ort_resize(x, size, "nearest", coord, nearest_mode=rounding))


@pytest.mark.parametrize("coord", ["half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("alpha,exclude", [(-0.5, 0), (-0.75, 0), (-0.75, 1)])
def test_cubic(coord, alpha, exclude):
    x = rand(1, 1, 5, 6)
    for size in [(9, 4), (2, 11)]:
        close(run("image.resize2d", x, size=size, method="cubic", coordinate_transformation_mode=coord,
                  cubic_alpha=alpha, cubic_exclude=exclude),
              ort_resize(x, size, "cubic", coord, cubic_coeff_a=alpha, exclude_outside=exclude), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("method", ["nearest", "linear"])
def test_tf_crop_and_resize(method):
    x = rand(1, 2, 5, 6)
    roi = [0.2, -0.1, 1.1, 0.7]     # starts (h, w), then ends: part of the box is outside
    ort_roi = np.array([0, 0, roi[0], roi[1], 1, 1, roi[2], roi[3]], np.float32)
    want = ort_run("Resize", [x, ort_roi, None, np.array([1, 2, 4, 7], np.int64)], mode=method,
                   coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-9.0,
                   nearest_mode="round_prefer_ceil")
    got = run("image.resize2d", x, size=[4, 7], roi=roi, method="nearest_neighbor" if method == "nearest" else method,
              coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-9.0,
              rounding_method="round_prefer_ceil")
    close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("coord", ["half_pixel", "half_pixel_symmetric", "asymmetric", "pytorch_half_pixel"])
@pytest.mark.parametrize("method", ["nearest", "linear", "cubic"])
def test_given_scales(coord, method):
    """ONNX Resize with scales whose output size is rounded: the coordinates
    use the scale given (the `scales` attribute), not output / input."""
    x = rand(1, 2, 4, 5)
    sc = np.array([1, 1, 0.6, 1.7], np.float32)
    want = ort_run("Resize", [x, None, sc], mode=method, coordinate_transformation_mode=coord)
    size = [int(np.floor(4 * 0.6)), int(np.floor(5 * 1.7))]
    got = run("image.resize2d", x, size=size, scales=[0.6, 1.7], coordinate_transformation_mode=coord,
              method="nearest_neighbor" if method == "nearest" else method, cubic_alpha=-0.75,
              rounding_method="round_prefer_floor")
    close(got, want, rtol=1e-5, atol=1e-5)


def test_layouts_and_ranks():
    x = rand(1, 3, 4, 5)
    want = ort_resize(x, (6, 3), "linear", "half_pixel")
    close(run("image.resize2d", x.transpose(0, 2, 3, 1), size=[6, 3], layout="NHWC").transpose(0, 3, 1, 2), want,
          rtol=1e-5, atol=1e-5)
    x1 = rand(2, 3, 7)
    close(run("image.resize1d", x1, size=[4], layout="NCW"), ort_resize(x1, (4,), "linear", "half_pixel"), rtol=1e-5,
          atol=1e-5)
    x3 = rand(1, 1, 3, 4, 2)
    close(run("image.resize3d", x3, size=[5, 2, 3], method="nearest_neighbor",
              coordinate_transformation_mode="asymmetric"),
          ort_resize(x3, (5, 2, 3), "nearest", "asymmetric", nearest_mode="floor"))


def test_upsampling():
    x = rand(1, 2, 3, 4)
    close(run("nn.upsampling", x, scale_h=2.0, scale_w=3.0), x.repeat(2, axis=2).repeat(3, axis=3))
    close(run("nn.upsampling", x, scale_h=2.0, scale_w=2.0, method="bilinear", align_corners=True),
          ort_resize(x, (6, 8), "linear", "align_corners"), rtol=1e-5, atol=1e-5)
    x3 = rand(1, 1, 2, 2, 3)
    close(run("nn.upsampling3d", x3, scale_d=2.0, scale_h=1.0, scale_w=2.0),
          ort_resize(x3, (4, 2, 6), "nearest", "half_pixel", nearest_mode="floor"))


def test_resize_types_and_errors():
    assert str(infer("image.resize2d", [tt((None, 3, None, None))], size=[224, 224])) == "tensor<?x3x224x224xf32>"
    assert str(infer("image.resize2d", [tt((1, 8, 8, 3), "ui8")], size=[4, 4], layout="NHWC")) == \
        "tensor<1x4x4x3xui8>"
    assert str(infer("nn.upsampling", [tt((1, 3, None, 5))], scale_h=2.0, scale_w=1.5)) == "tensor<1x3x?x8xf32>"
    type_error("image.resize2d", [tt((1, 3, 4))], "expects 4-d data in layout NCHW", size=[2, 2])
    type_error("image.resize2d", [tt((1, 3, 4, 4))], "roi must have 4 values", size=[2, 2], roi=[0.0, 1.0])
    type_error("image.resize2d", [tt((1, 3, 4, 4))], "the output size along H must be positive", size=[0, 2])


def test_resize_in_text():
    src = """
relay.func @main(%x: tensor<1x1x2x2xf32>) {
  %r = image.resize2d(%x) {size = [4, 4], coordinate_transformation_mode = "align_corners"}
  return %r
}"""
    x = np.array([[[[0.0, 3.0], [6.0, 9.0]]]], np.float32)
    close(run_text(src, x)[0, 0], [[0, 1, 2, 3], [2, 3, 4, 5], [4, 5, 6, 7], [6, 7, 8, 9]])
