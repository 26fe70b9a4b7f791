"""nn relay ops other than conv/pool/norm: matrix products, bias_add,
softmax, dropout, pad, lrn, l2_normalize, batch_flatten, depth/space;
compute against numpy (onnxruntime for LRN and DepthToSpace), type
relations with dynamic dims, errors."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from relay_ops_helpers import close, infer, ort_run, rand, run, run_text, tt, type_error  # noqa: E402


def matmul_loops(a, b):
    """(M, K) x (K, N), written out."""
    m, k = a.shape
    n = b.shape[1]
    return np.array([[sum(float(a[i, t]) * float(b[t, j]) for t in range(k)) for j in range(n)] for i in range(m)])


def test_dense():
    x, w = rand(3, 5), rand(4, 5)
    close(run("nn.dense", x, w), matmul_loops(x, w.T))
    assert str(infer("nn.dense", [tt((None, 7, 5)), tt((4, 5))])) == "tensor<?x7x4xf32>"
    xi, wi = rand(2, 3, dtype=np.int8, low=-128, high=127), rand(4, 3, dtype=np.int8, low=-128, high=127)
    out = run("nn.dense", xi, wi, out_dtype="int32")
    assert out.dtype == np.int32 and (out == matmul_loops(xi, wi.T)).all()
    type_error("nn.dense", [tt((2, 3)), tt((5, 4))], "reduction dimensions differ: data has 3, weight has 4")
    type_error("nn.dense", [tt((2, 3)), tt((5, 3))], "units = 4 but the weight has 5 rows", units=4)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_transposes(ta, tb):
    a = rand(2, 5, 3) if ta else rand(2, 3, 5)
    b = rand(4, 5) if tb else rand(5, 4)
    out = run("nn.matmul", a, b, transpose_a=ta, transpose_b=tb)
    for i in range(2):
        ai = a[i].T if ta else a[i]
        close(out[i], matmul_loops(ai, b.T if tb else b))
    assert str(infer("nn.matmul", [tt((None, 3, 5)), tt((5, 4))])) == "tensor<?x3x4xf32>"
    type_error("nn.matmul", [tt((3, 5)), tt((6, 4))], "reduction dimensions differ: tensor_a has 5, tensor_b has 6")


def test_batch_matmul_defaults_and_broadcast():
    x, y = rand(3, 2, 4), rand(3, 5, 4)   # transpose_b = true by default, as TVM
    out = run("nn.batch_matmul", x, y)
    for i in range(3):
        close(out[i], matmul_loops(x[i], y[i].T))
    out = run("nn.batch_matmul", rand(1, 2, 4), y)
    assert out.shape == (3, 2, 5)
    x2, y2 = rand(2, 4, 3), rand(2, 4, 5)
    out = run("nn.batch_matmul", x2, y2, transpose_a=True, transpose_b=False)
    close(out[1], matmul_loops(x2[1].T, y2[1]))
    assert str(infer("nn.batch_matmul", [tt((None, 128, 64)), tt((None, 128, 64))])) == "tensor<?x128x128xf32>"
    type_error("nn.batch_matmul", [tt((2, 3, 4)), tt((3, 5, 4))], "batch dimensions 2 and 3 differ")
    type_error("nn.batch_matmul", [tt((3, 4)), tt((3, 5, 4))], "expects 3-d operands")


def test_bias_add():
    x, b = rand(2, 3, 4, 4), rand(3)
    close(run("nn.bias_add", x, b), x + b[None, :, None, None])
    b4 = rand(4)
    close(run("nn.bias_add", x, b4, axis=-1), x + b4)
    assert infer("nn.bias_add", [tt((None, 3)), tt((None,))]) is tt((None, 3))
    type_error("nn.bias_add", [tt((2, 3)), tt((4,))], r"bias must be 1-d of size 3 \(axis 1 of the data\)")
    type_error("nn.bias_add", [tt((2, 3)), tt((3,))], "axis 2 is out of range for rank 2", axis=2)


def test_softmax_and_log_softmax():
    x = rand(2, 3, 5, low=-30, high=30)
    for axis in (-1, 1):
        e = np.exp(x.astype(np.float64) - x.max(axis=axis, keepdims=True))
        want = e / e.sum(axis=axis, keepdims=True)
        close(run("nn.softmax", x, axis=axis), want, rtol=1e-5, atol=1e-7)
        close(run("nn.log_softmax", x, axis=axis), np.log(want), rtol=1e-5, atol=1e-5)
    assert infer("nn.softmax", [tt((None, 12, None, None))]) is tt((None, 12, None, None))
    type_error("nn.softmax", [tt((2, 3), "i32")], "expects a floating-point tensor")
    type_error("nn.softmax", [tt((2, 3))], "axis 2 is out of range", axis=2)


def test_dropout_is_a_pair():
    x = rand(2, 3)
    out, mask = run("nn.dropout", x, rate=0.1)
    assert (out == x).all() and (mask == 1).all()
    assert str(infer("nn.dropout", [tt((None, 3))])) == "tuple<tensor<?x3xf32>, tensor<?x3xf32>>"
    type_error("nn.dropout", [tt((2,))], r"rate must be in \[0, 1\)", rate=1.5)


def pad_loops(x, pw, mode, value=0.0):
    """Each output element read back from the input by its definition."""
    out_shape = [d + b + a for d, (b, a) in zip(x.shape, pw)]
    out = np.empty(out_shape, x.dtype)
    for idx in np.ndindex(*out_shape):
        src, inside = [], True
        for i, (b, _), d in zip(idx, pw, x.shape):
            j = i - b
            if 0 <= j < d:
                src.append(j)
            elif mode == "constant":
                inside = False
            elif mode == "edge":
                src.append(min(max(j, 0), d - 1))
            elif mode == "wrap":
                src.append(j % d)
            else:   # reflect, without repeating the edge
                src.append(-j if j < 0 else 2 * (d - 1) - j)
        out[idx] = x[tuple(src)] if inside else value
    return out


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pad_modes(mode):
    x = rand(2, 3, 4)
    pw = [[0, 1], [2, 1], [1, 3]]
    close(run("nn.pad", x, pad_width=pw, pad_mode=mode, pad_value=1.5), pad_loops(x, pw, mode, 1.5))


def test_pad_value_operand_and_types():
    x = rand(2, 3)
    close(run("nn.pad", x, np.float32(-4), pad_width=[[1, 0], [0, 2]]), pad_loops(x, [[1, 0], [0, 2]], "constant", -4))
    assert str(infer("nn.pad", [tt((None, 3))], pad_width=[[1, 1], [2, 2]])) == "tensor<?x7xf32>"
    type_error("nn.pad", [tt((2, 3))], "pad_width has 1 pairs but the data has rank 2", pad_width=[[1, 1]])
    type_error("nn.pad", [tt((2, 3))], "pad_width of axis 0 is negative", pad_width=[[-1, 1], [0, 0]])
    type_error("nn.pad", [tt((2, 3))], "reflect padding of axis 1 must be smaller than its size 3",
               pad_width=[[0, 0], [3, 0]], pad_mode="reflect")


def test_lrn_matches_onnxruntime():
    x = rand(2, 7, 3, 3)
    want = ort_run("LRN", [x], size=5, alpha=1e-3, beta=0.75, bias=2.0)
    close(run("nn.lrn", x, size=5, alpha=1e-3, beta=0.75, bias=2.0), want, rtol=1e-5)
    # NHWC: the channel axis is last
    close(run("nn.lrn", x.transpose(0, 2, 3, 1), size=3, axis=3, alpha=1e-2),
          ort_run("LRN", [x], size=3, alpha=1e-2, beta=0.75, bias=2.0).transpose(0, 2, 3, 1), rtol=1e-5)


def test_l2_normalize_and_batch_flatten():
    x = rand(2, 3, 4)
    s = np.sqrt(np.maximum((x.astype(np.float64) ** 2).sum(axis=1, keepdims=True), 1e-3))
    close(run("nn.l2_normalize", x, eps=1e-3, axis=[1]), x / s)
    assert (run("nn.batch_flatten", x) == x.reshape(2, 12)).all()
    assert str(infer("nn.batch_flatten", [tt((None, 3, 4))])) == "tensor<?x12xf32>"
    assert str(infer("nn.batch_flatten", [tt((2, None, 4))])) == "tensor<2x?xf32>"


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_and_back(mode):
    x = rand(2, 12, 2, 3)
    out = run("nn.depth_to_space", x, block_size=2, mode=mode)
    close(out, ort_run("DepthToSpace", [x], blocksize=2, mode=mode))
    nhwc = run("nn.depth_to_space", x.transpose(0, 2, 3, 1), block_size=2, mode=mode, layout="NHWC")
    close(nhwc.transpose(0, 3, 1, 2), out)
    back = run("nn.space_to_depth", out, block_size=2)
    close(back, ort_run("SpaceToDepth", [out], blocksize=2))
    if mode == "DCR":
        close(back, x)
    type_error("nn.depth_to_space", [tt((1, 6, 2, 2))], "6 channels do not divide by block_size", block_size=2)


def test_bert_attention_block_in_text():
    """The ops a BERT encoder's attention needs, through the parser and interpreter."""
    src = """
relay.func @main(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) {
  %q = nn.dense(%x, %w)
  %r = reshape(%q) {newshape = [0, 0, 2, 4]}
  %t = transpose(%r) {axes = [0, 2, 1, 3]}
  %b = reshape(%t) {newshape = [-1, 4, 4]}
  %s = nn.batch_matmul(%b, %b)
  %p = nn.softmax(%s)
  %o = nn.batch_matmul(%p, %b) {transpose_b = false}
  return %o
}"""
    x, w = rand(2, 4, 8), rand(8, 8)
    q = x.astype(np.float64) @ w.T
    b = q.reshape(2, 4, 2, 4).transpose(0, 2, 1, 3).reshape(4, 4, 4)
    s = b @ b.transpose(0, 2, 1)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    close(run_text(src, x, w), p @ b, rtol=1e-4, atol=1e-5)
