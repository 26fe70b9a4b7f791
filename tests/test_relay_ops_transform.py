"""Data movement: reshape (TVM's codes 0/-1/-2/-3/-4), transpose, squeeze,
expand_dims, concatenate, stack, split, strided_slice, broadcast_to, tile,
repeat, reverse, layout_transform; compute against numpy, types with
dynamic dims (kept as precise as the inputs allow), relayout(), errors."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from relay_ops_helpers import build, infer, rand, run, run_text, tt, type_error  # noqa: E402


@pytest.mark.parametrize("newshape,want", [
    ([6, 4], (6, 4)), ([0, -1], (2, 12)), ([-1], (24,)), ([-2], (2, 3, 4)), ([0, -2], (2, 3, 4)),
    ([-3, 4], (6, 4)), ([2, -3], (2, 12)), ([-4, 1, 2, -2], (1, 2, 3, 4)), ([-4, -1, 2, -2], (1, 2, 3, 4)),
    ([0, -4, 3, -1, 4], (2, 3, 1, 4)), ([4, 0, 2], (4, 3, 2)), ([-1, 2, 2], (6, 2, 2)),
])
def test_reshape_codes(newshape, want):
    x = rand(2, 3, 4)
    out = run("reshape", x, newshape=newshape)
    assert out.shape == want and (out.ravel() == x.ravel()).all()


def test_reshape_dynamic_dims():
    assert str(infer("reshape", [tt((None, 128, 768))], newshape=[0, 0, 12, 64])) == "tensor<?x128x12x64xf32>"
    assert str(infer("reshape", [tt((None, 12, 64))], newshape=[0, -1])) == "tensor<?x768xf32>"
    assert str(infer("reshape", [tt((None, 12, 64))], newshape=[-1, 64])) == "tensor<?x64xf32>"
    assert str(infer("reshape", [tt((None, 12, 64))], newshape=[0, 6, -1])) == "tensor<?x6x128xf32>"
    assert str(infer("reshape", [tt((None, 4))], newshape=[2, -1])) == "tensor<2x?xf32>"
    assert str(infer("reshape", [tt((None, None))], newshape=[-3])) == "tensor<?xf32>"
    x = rand(5, 12, 64)
    assert run("reshape", x, newshape=[0, -1]).shape == (5, 768)


def test_reshape_errors():
    type_error("reshape", [tt((2, 3))], r"cannot reshape \[2, 3\] \(6 elements\) to \[4, 2\] \(8 elements\)",
               newshape=[4, 2])
    type_error("reshape", [tt((2, 3))], "has more than one -1", newshape=[-1, -1])
    type_error("reshape", [tt((2, 3))], "6 elements do not divide by 4", newshape=[4, -1])
    type_error("reshape", [tt((2, 3))], "cannot split dimension 2 into 3 x 1", newshape=[-4, 3, 1, 3])
    type_error("reshape", [tt((2, 3))], "reads past the 2 input dimensions", newshape=[0, 0, 0])
    type_error("reshape", [tt((2, 3))], "has the invalid code -5", newshape=[-5])
    type_error("reshape_like", [tt((2, 3)), tt((5,))], r"cannot reshape tensor<2x3xf32> \(6 elements\) like")
    assert run("reshape_like", rand(2, 3), rand(3, 2)).shape == (3, 2)


def test_transpose_squeeze_expand_dims():
    x = rand(2, 3, 4)
    assert (run("transpose", x) == x.transpose()).all()
    assert (run("transpose", x, axes=[1, -1, 0]) == x.transpose(1, 2, 0)).all()
    assert str(infer("transpose", [tt((None, 3, 4))], axes=[0, 2, 1])) == "tensor<?x4x3xf32>"
    type_error("transpose", [tt((2, 3))], r"axes \[0\] must list all 2 axes", axes=[0])
    type_error("transpose", [tt((2, 3))], "axes entry 0 names axis 0 a second time", axes=[0, 0])
    y = rand(1, 3, 1, 2)
    assert run("squeeze", y).shape == (3, 2)
    assert run("squeeze", y, axis=[2]).shape == (1, 3, 2)
    assert str(infer("squeeze", [tt((1, None, 1))])) == "tensor<?xf32>"        # ? might not be 1: kept
    assert str(infer("squeeze", [tt((1, None, 3))], axis=[1])) == "tensor<1x3xf32>"
    type_error("squeeze", [tt((1, 3))], "cannot squeeze axis 1 of size 3", axis=[1])
    assert run("expand_dims", x, axis=1, num_newaxis=2).shape == (2, 1, 1, 3, 4)
    assert run("expand_dims", x, axis=-1).shape == (2, 3, 4, 1)
    assert str(infer("expand_dims", [tt((None,))], axis=0)) == "tensor<1x?xf32>"
    type_error("expand_dims", [tt((2,))], "axis 3 is out of range for inserting into rank 1", axis=3)


def test_concatenate_and_stack():
    a, b, c = rand(2, 3), rand(2, 1), rand(2, 4)
    assert (run("concatenate", a, b, c, axis=1) == np.concatenate([a, b, c], axis=1)).all()
    assert (run("concatenate", a, a, axis=-2) == np.concatenate([a, a], axis=0)).all()
    assert str(infer("concatenate", [tt((None, 3)), tt((2, 5))], axis=1)) == "tensor<2x8xf32>"
    assert str(infer("concatenate", [tt((2, None)), tt((2, 5))], axis=1)) == "tensor<2x?xf32>"
    type_error("concatenate", [tt((2, 3)), tt((3, 3))], "input 1 differs in dimension 0: 2 vs 3", axis=1)
    type_error("concatenate", [tt((2, 3)), tt((3,))], "inputs have different ranks")
    type_error("concatenate", [tt((2, 3)), tt((2, 3), "f16")], "operand element types differ")
    assert (run("stack", a, a, axis=1) == np.stack([a, a], axis=1)).all()
    assert (run("stack", a, a, a, axis=-1) == np.stack([a, a, a], axis=-1)).all()
    assert str(infer("stack", [tt((None, 3)), tt((2, 3))], axis=0)) == "tensor<2x2x3xf32>"
    type_error("stack", [tt((2, 3)), tt((2, 4))], "input 1 differs in dimension 1: 3 vs 4")


def test_split():
    x = rand(6, 4)
    parts = run("split", x, indices_or_sections=3)
    assert len(parts) == 3 and all((p == q).all() for p, q in zip(parts, np.split(x, 3)))
    parts = run("split", x, indices_or_sections=[1, 3], axis=1)
    assert [p.shape for p in parts] == [(6, 1), (6, 2), (6, 1)]
    assert str(infer("split", [tt((None, 8))], indices_or_sections=2, axis=1)) == \
        "tuple<tensor<?x4xf32>, tensor<?x4xf32>>"
    assert str(infer("split", [tt((None, 8))], indices_or_sections=[2], axis=0)) == \
        "tuple<tensor<2x8xf32>, tensor<?x8xf32>>"
    type_error("split", [tt((6, 4))], "dimension 4 does not split into 3 equal sections", indices_or_sections=3,
               axis=1)
    type_error("split", [tt((6, 4))], r"split indices \[3, 1\] must be ascending", indices_or_sections=[3, 1])
    type_error("split", [tt((6, 4))], "split index 7 is past the dimension 6", indices_or_sections=[7])


@pytest.mark.parametrize("attrs,index", [
    ({"begin": [1], "end": [3]}, (slice(1, 3),)),
    ({"begin": [0, 1], "end": [2, 4], "strides": [1, 2]}, (slice(0, 2), slice(1, 4, 2))),
    ({"begin": [-1, 0], "end": [-4, 100], "strides": [-1]}, (slice(-1, -4, -1), slice(0, 100, -1))),
    ({"begin": [3], "end": [-100], "strides": [-2], "axes": [2]}, (slice(None), slice(None), slice(3, -100, -2))),
    ({"begin": [1, 0], "end": [2, -1], "slice_mode": "size"}, (slice(1, 3), slice(0, None))),
    ({"begin": [-2], "end": [1], "axes": [1], "slice_mode": "size"}, (slice(None), slice(-2, -1))),
    ({"begin": [0], "end": [1], "axes": [-1]}, (slice(None), slice(None), slice(0, 1))),
])
def test_strided_slice(attrs, index):
    x = rand(4, 5, 6)
    out = run("strided_slice", x, **attrs)
    assert out.shape == x[index].shape and (out == x[index]).all()


def test_strided_slice_types_and_relayout():
    assert str(infer("strided_slice", [tt((None, 128, 768))], begin=[0, 0], end=[1, 768], axes=[1, 2])) == \
        "tensor<?x1x768xf32>"
    assert str(infer("strided_slice", [tt((None, 8))], begin=[0], end=[1])) == "tensor<?x8xf32>"
    type_error("strided_slice", [tt((4, 5))], "strides must be non-zero", begin=[0], end=[2], strides=[0])
    type_error("strided_slice", [tt((4, 5))], "begin, end and axes must have the same length", begin=[0, 1],
               end=[2], axes=[0])
    # the same slice on a transposed input: relayout renumbers the axes
    x = rand(2, 3, 4)
    op = build("strided_slice", [tt((2, 3, 4))], begin=[1, 0], end=[2, 3], strides=[1, 2])
    perm = [2, 0, 1]
    new = op.relayout(perm)
    out = run("strided_slice", x.transpose(perm), begin=[1, 0], end=[2, 3], **new)
    assert (out == x[1:2, 0:3:2].transpose(perm)).all()


def test_transpose_relayout_keeps_the_permuted_layout():
    x = rand(2, 3, 4, 5)
    op = build("transpose", [tt((2, 3, 4, 5))], axes=[0, 2, 1, 3])
    perm = [0, 2, 3, 1]          # NCHW -> NHWC
    out = run("transpose", x.transpose(perm), **op.relayout(perm))
    assert (out == x.transpose(0, 2, 1, 3).transpose(perm)).all()


def test_broadcast_tile_repeat_reverse():
    x = rand(3, 1)
    assert (run("broadcast_to", x, shape=[2, 3, 4]) == np.broadcast_to(x, (2, 3, 4))).all()
    type_error("broadcast_to", [tt((3, 2))], r"cannot broadcast tensor<3x2xf32> to \[3, 4\]", shape=[3, 4])
    assert run("broadcast_to_like", x, rand(3, 5)).shape == (3, 5)
    y = rand(2, 3)
    assert (run("tile", y, reps=[2, 1, 3]) == np.tile(y, (2, 1, 3))).all()
    assert (run("tile", y, reps=[2]) == np.tile(y, 2)).all()
    assert str(infer("tile", [tt((None, 3))], reps=[2, 2])) == "tensor<?x6xf32>"
    assert (run("repeat", y, repeats=2, axis=-1) == np.repeat(y, 2, axis=-1)).all()
    assert str(infer("repeat", [tt((None, 3))], repeats=3, axis=0)) == "tensor<?x3xf32>"
    assert (run("reverse", y, axis=1) == y[:, ::-1]).all()
    type_error("reverse", [tt((2, 3))], "axis -3 is out of range for rank 2", axis=-3)


def test_layout_transform():
    x = rand(1, 8, 3, 3)
    out = run("layout_transform", x, src_layout="NCHW", dst_layout="NCHW4c")
    assert out.shape == (1, 2, 3, 3, 4) and out[0, 1, 2, 0, 3] == x[0, 7, 2, 0]
    type_error("layout_transform", [tt((1, 8, 3, 3))], "do not have the same axes", src_layout="NCHW",
               dst_layout="NCW")


def test_priority_ops_in_text():
    src = """
relay.func @main(%x: tensor<2x6x4xf32>) {
  %s = split(%x) {indices_or_sections = 2, axis = 1}
  %a = get_item(%s) {index = 0}
  %b = get_item(%s) {index = 1}
  %c = concatenate(%b, %a) {axis = 2}
  %e = expand_dims(%c) {axis = 0}
  %q = squeeze(%e) {axis = [0]}
  %v = strided_slice(%q) {begin = [1], end = [-1], axes = [2]}
  %t = transpose(%v) {axes = [2, 0, 1]}
  return %t
}"""
    x = rand(2, 6, 4)
    a, b = x[:, :3], x[:, 3:]
    want = np.concatenate([b, a], axis=2)[:, :, 1:-1].transpose(2, 0, 1)
    assert (run_text(src, x) == want).all()
