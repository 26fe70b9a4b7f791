"""Reductions: every op against numpy over axis None / int / list, keepdims
and exclude; argmax/argmin with select_last_index; variance/std (unbiased,
the mean operand); types with dynamic dims; errors."""

import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from relay_ops_helpers import close, infer, rand, run, run_text, tt, type_error  # noqa: E402

REFS = {
    "sum": lambda z, ax, kd: z.sum(axis=ax, keepdims=kd),
    "mean": lambda z, ax, kd: z.mean(axis=ax, keepdims=kd),
    "max": lambda z, ax, kd: z.max(axis=ax, keepdims=kd),
    "min": lambda z, ax, kd: z.min(axis=ax, keepdims=kd),
    "prod": lambda z, ax, kd: z.prod(axis=ax, keepdims=kd),
    "logsumexp": lambda z, ax, kd: np.log(np.exp(z).sum(axis=ax, keepdims=kd)),
    "variance": lambda z, ax, kd: z.var(axis=ax, keepdims=kd),
    "std": lambda z, ax, kd: z.std(axis=ax, keepdims=kd),
}
AXES = [None, 1, -1, [0, 2], []]


@pytest.mark.parametrize("name", sorted(REFS))
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(name, axis, keepdims):
    x = rand(2, 3, 4, low=0.5, high=1.5)
    attrs = {} if axis is None else {"axis": axis}
    ax = None if axis is None else tuple(np.atleast_1d(axis)) if axis != [] else ()
    want = REFS[name](x.astype(np.float64), ax, keepdims)
    close(run(name, x, keepdims=keepdims, **attrs), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axis", [[1], [0, 2], []], ids=str)
def test_exclude_reduces_the_other_axes(axis):
    x = rand(2, 3, 4)
    other = tuple(i for i in range(3) if i not in axis)
    close(run("sum", x, axis=axis, exclude=True), x.astype(np.float64).sum(axis=other), rtol=1e-5, atol=1e-6)
    close(run("mean", x, axis=axis, exclude=True, keepdims=True),
          x.astype(np.float64).mean(axis=other, keepdims=True), rtol=1e-5, atol=1e-6)


def test_unbiased_variance_std_and_mean_operand():
    x = rand(3, 5)
    z = x.astype(np.float64)
    close(run("variance", x, axis=1, unbiased=True), z.var(axis=1, ddof=1), rtol=1e-5)
    close(run("std", x, axis=[0], unbiased=True), z.std(axis=0, ddof=1), rtol=1e-5)
    m = x.mean(axis=1, keepdims=True)
    close(run("variance", x, m, axis=1, keepdims=True), z.var(axis=1, keepdims=True), rtol=1e-5)
    type_error("variance", [tt((3, 5)), tt((5, 5))], r"the mean tensor<5x5xf32> does not broadcast to the reduced "
               r"shape \[3, 1\]", axis=1)
    type_error("variance", [tt((3, 1))], "an unbiased variance needs at least 2 elements", axis=1, unbiased=True)


def test_arg_reductions():
    x = np.array([[3, 1, 3, 0], [2, 2, 5, 5]], np.float32)
    assert run("argmax", x, axis=1).tolist() == [0, 2]
    assert run("argmax", x, axis=1, select_last_index=True).tolist() == [2, 3]
    assert run("argmin", x, axis=0, keepdims=True).tolist() == [[1, 0, 0, 0]]
    assert run("argmin", x, axis=1, select_last_index=True).tolist() == [3, 1]
    assert int(run("argmax", x)) == 6     # flat row-major index over all axes
    assert run("argmax", x, axis=1).dtype == np.int32


def test_integer_and_boolean_reductions():
    i = np.array([[1, -3, 5], [7, 2, -8]], np.int32)
    assert run("sum", i, axis=1).tolist() == [3, 1]
    assert run("mean", i, axis=1).tolist() == [math.trunc(3 / 3), math.trunc(1 / 3)]
    b = np.array([[True, False], [True, True]])
    assert run("all", b, axis=1).tolist() == [False, True]
    assert run("any", b, axis=0).tolist() == [True, True]
    type_error("all", [tt((2,))], r"expects a boolean \(i1\) tensor")
    type_error("logsumexp", [tt((2,), "i32")], "expects a floating-point tensor")


def test_reduce_types_and_errors():
    assert str(infer("mean", [tt((None, 128, 768))], axis=-1, keepdims=True)) == "tensor<?x128x1xf32>"
    assert str(infer("sum", [tt((None, 3, None))], axis=[1])) == "tensor<?x?xf32>"
    assert str(infer("max", [tt((2, 3))])) == "tensor<f32>"
    assert str(infer("argmax", [tt((None, 10))], axis=1)) == "tensor<?xi32>"
    type_error("sum", [tt((2, 3))], "axis 2 is out of range for rank 2", axis=2)
    type_error("sum", [tt((2, 3))], r"axis -1 names axis 1 a second time in \[1, -1\]", axis=[1, -1])


def test_layer_norm_by_hand_in_text():
    """SimplifyInference's expansion of layer_norm: mean, variance with the mean, normalise."""
    src = """
relay.func @main(%x: tensor<2x8xf32>) {
  %m = mean(%x) {axis = [-1], keepdims = true}
  %v = variance(%x, %m) {axis = [-1], keepdims = true}
  %e = constant dense<1e-05> : tensor<f32>
  %s = add(%v, %e)
  %d = sqrt(%s)
  %c = subtract(%x, %m)
  %y = divide(%c, %d)
  return %y
}"""
    x = rand(2, 8)
    z = x.astype(np.float64)
    want = (z - z.mean(-1, keepdims=True)) / np.sqrt(z.var(-1, keepdims=True) + 1e-5)
    close(run_text(src, x), want, rtol=1e-5, atol=1e-5)
