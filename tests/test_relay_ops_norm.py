"""Normalisations: batch_norm (TVM's 3-tuple, inference form), layer_norm,
group_norm, instance_norm against numpy formulas and onnxruntime; center
and scale flags; types with dynamic dims; errors."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from relay_ops_helpers import close, infer, ort_run, rand, run, run_text, tt, type_error  # noqa: E402


def test_batch_norm_matches_onnxruntime():
    x, g, b, m = rand(2, 3, 4, 5), rand(3), rand(3), rand(3)
    v = rand(3, low=0.2, high=2.0)
    out, mm, mv = run("nn.batch_norm", x, g, b, m, v, epsilon=1e-3)
    close(out, ort_run("BatchNormalization", [x, g, b, m, v], epsilon=1e-3), rtol=1e-5)
    assert (mm == m).all() and (mv == v).all()


@pytest.mark.parametrize("center,scale", [(True, False), (False, True), (False, False)])
def test_batch_norm_flags_and_axis(center, scale):
    x, g, b, m = rand(2, 5, 3), rand(3), rand(3), rand(3)
    v = rand(3, low=0.2, high=2.0)
    want = (x - m) / np.sqrt(v + 1e-5)
    if scale:
        want = want * g
    if center:
        want = want + b
    out = run("nn.batch_norm", x, g, b, m, v, axis=-1, center=center, scale=scale)[0]
    close(out, want, rtol=1e-5)


def test_layer_norm():
    x, g, b = rand(2, 4, 8), rand(8), rand(8)
    close(run("nn.layer_norm", x, g, b), ort_run("LayerNormalization", [x, g, b], axis=-1, epsilon=1e-5), rtol=1e-5,
          atol=1e-5)
    g1, b1 = rand(4), rand(4)
    z = x.astype(np.float64)
    mean = z.mean(axis=1, keepdims=True)
    var = ((z - mean) ** 2).mean(axis=1, keepdims=True)
    want = (z - mean) / np.sqrt(var + 1e-3) * g1[None, :, None] + b1[None, :, None]
    close(run("nn.layer_norm", x, g1, b1, axis=1, epsilon=1e-3), want, rtol=1e-5, atol=1e-6)


def test_instance_and_group_norm():
    x, g, b = rand(2, 4, 3, 5), rand(4), rand(4)
    close(run("nn.instance_norm", x, g, b), ort_run("InstanceNormalization", [x, g, b], epsilon=1e-5), rtol=1e-5,
          atol=1e-5)
    z = x.astype(np.float64).reshape(2, 2, 2, 3, 5)
    mean = z.mean(axis=(2, 3, 4), keepdims=True)
    var = ((z - mean) ** 2).mean(axis=(2, 3, 4), keepdims=True)
    want = ((z - mean) / np.sqrt(var + 1e-5)).reshape(x.shape) * g[None, :, None, None] + b[None, :, None, None]
    close(run("nn.group_norm", x, g, b, num_groups=2), want, rtol=1e-5, atol=1e-5)
    # channels last
    close(run("nn.group_norm", x.transpose(0, 2, 3, 1), g, b, num_groups=2, axis=3), want.transpose(0, 2, 3, 1),
          rtol=1e-5, atol=1e-5)


def test_norm_types_and_errors():
    assert str(infer("nn.batch_norm", [tt((None, 3, None, None)), tt((3,)), tt((3,)), tt((3,)), tt((3,))])) == \
        "tuple<tensor<?x3x?x?xf32>, tensor<3xf32>, tensor<3xf32>>"
    assert infer("nn.layer_norm", [tt((None, None, 768)), tt((768,)), tt((768,))]) is tt((None, None, 768))
    type_error("nn.batch_norm", [tt((2, 3)), tt((4,)), tt((3,)), tt((3,)), tt((3,))],
               r"gamma must be 1-d of size 3 \(axis 1 of the data\)")
    type_error("nn.layer_norm", [tt((2, 3), "i32"), tt((3,), "i32"), tt((3,), "i32")], "expects floating-point data")
    type_error("nn.group_norm", [tt((2, 6, 4)), tt((6,)), tt((6,))], "6 channels do not divide into num_groups = 4",
               num_groups=4)
    type_error("nn.instance_norm", [tt((2, 3)), tt((2,)), tt((2,))], "channel axis after the batch axis", axis=0)


def test_batch_norm_in_text_through_get_item():
    src = """
relay.func @main(%x: tensor<1x2x3x3xf32>, %g: tensor<2xf32>, %b: tensor<2xf32>, %m: tensor<2xf32>, %v: tensor<2xf32>) {
  %bn = nn.batch_norm(%x, %g, %b, %m, %v) {epsilon = 0.001}
  %y = get_item(%bn) {index = 0}
  %r = nn.relu(%y)
  return %r
}"""
    x, g, b, m = rand(1, 2, 3, 3), rand(2), rand(2), rand(2)
    v = rand(2, low=0.5)
    want = (x - m[:, None, None]) / np.sqrt(v[:, None, None] + 1e-3) * g[:, None, None] + b[:, None, None]
    close(run_text(src, x, g, b, m, v), np.maximum(want, 0), rtol=1e-5, atol=1e-6)
