"""Creation, shape queries and indexing: zeros/ones/full/arange,
shape_of/ndarray_size, take (clip/wrap/fast, batch_dims), gather,
gather_nd (batch_dims), scatter_elements (reductions), one_hot; against
numpy and onnxruntime; types with dynamic dims; errors."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from relay_ops_helpers import close, infer, ort_run, rand, run, run_text, tt, type_error  # noqa: E402

from tvmd.ir.diagnostics import DiagnosticError  # noqa: E402


def test_creation():
    z = run("zeros", shape=[2, 3])
    assert z.dtype == np.float32 and z.shape == (2, 3) and not z.any()
    o = run("ones", shape=[4], dtype="int64")
    assert o.dtype == np.int64 and (o == 1).all()
    f = run("full", np.array(2.5, np.float32), shape=[2, 2])
    assert f.dtype == np.float32 and (f == 2.5).all()
    assert run("full", np.array([7], np.int8), shape=[3], dtype="int32").tolist() == [7, 7, 7]
    assert run("arange", stop=5.0).tolist() == [0, 1, 2, 3, 4]
    assert run("arange", start=1.0, stop=2.0, step=0.25).tolist() == [1.0, 1.25, 1.5, 1.75]
    assert run("arange", start=10.0, stop=0.0, step=-3.0, dtype="int32").tolist() == [10, 7, 4, 1]
    assert run("arange", start=3.0, stop=1.0).shape == (0,)
    type_error("arange", [], "step must be non-zero", stop=3.0, step=0.0)
    type_error("zeros", [], r"shape \[2, -1\] has a negative dimension", shape=[2, -1])
    type_error("full", [tt((2,))], "expects a single-element fill_value", shape=[2])


def test_shape_queries():
    x = rand(2, 3, 4)
    s = run("shape_of", x)
    assert s.dtype == np.int32 and s.tolist() == [2, 3, 4]
    assert run("shape_of", x, dtype="int64").dtype == np.int64
    assert int(run("ndarray_size", x)) == 24
    assert str(infer("shape_of", [tt((None, 3))])) == "tensor<2xi32>"
    assert str(infer("ndarray_size", [tt((None, 3))], dtype="int64")) == "tensor<i64>"


@pytest.mark.parametrize("mode", ["clip", "wrap", "fast"])
def test_take_modes(mode):
    x = rand(3, 5)
    idx = np.array([[0, 4], [-1, 2]], np.int32) if mode == "fast" else np.array([[0, 7], [-1, 2]], np.int32)
    fix = {"clip": lambda i: np.clip(i, 0, 4), "wrap": lambda i: np.mod(i, 5),
           "fast": lambda i: np.where(i < 0, i + 5, i)}
    assert (run("take", x, idx, axis=1, mode=mode) == x[:, fix[mode](idx)]).all()
    flat = np.array([0, 14, 20], np.int64)
    if mode != "fast":
        want = x.ravel()[np.clip(flat, 0, 14) if mode == "clip" else np.mod(flat, 15)]
        assert (run("take", x, flat, mode=mode) == want).all()


def test_take_batch_dims_and_types():
    x = rand(2, 4, 3)
    idx = np.array([[0, 3], [2, 2]], np.int64)
    out = run("take", x, idx, axis=1, batch_dims=1)
    want = np.stack([x[b][idx[b]] for b in range(2)])
    assert out.shape == (2, 2, 3) and (out == want).all()
    assert str(infer("take", [tt((None, 768)), tt((None, 128), "i64")], axis=0)) == "tensor<?x128x768xf32>"
    assert str(infer("take", [tt((5, 6)), tt((2,), "i32")])) == "tensor<2xf32>"
    type_error("take", [tt((5, 6)), tt((2,))], "expects an integer indices")
    type_error("take", [tt((5, 6)), tt((2,), "i32")], "axis 2 is out of range", axis=2)
    with pytest.raises(DiagnosticError, match="index 9 is out of range for a dimension of size 6"):
        run("take", rand(5, 6), np.array([9], np.int32), axis=1, mode="fast")


def test_gather_and_gather_nd_match_onnxruntime():
    x = rand(3, 4, 5)
    idx = np.array([[[0, -1], [2, 1], [3, 3], [0, 0]]] * 3, np.int64)   # (3, 4, 2)
    close(run("gather", x, idx, axis=2), ort_run("GatherElements", [x, idx], axis=2))
    i2 = np.array([[2, 1], [0, 2]], np.int64)[:, :, None].repeat(5, axis=2)[:2]   # (2, 2, 5)
    close(run("gather", x, i2, axis=0), ort_run("GatherElements", [x, i2], axis=0))
    # TVM's gather_nd: the first axis of indices holds the coordinates (ONNX's holds them last)
    nd = np.array([[0, 2, 1], [3, 0, 3]], np.int64)           # M = 2 coordinates, 3 lookups
    close(run("gather_nd", x, nd), ort_run("GatherND", [x, np.ascontiguousarray(nd.T)]))
    bnd = np.array([[[1], [3], [0]]], np.int64)                # M = 1, batch_dims 1: (1, 3, 1)
    close(run("gather_nd", x, bnd, batch_dims=1),
          ort_run("GatherND", [x, np.moveaxis(bnd, 0, -1)], batch_dims=1))
    assert str(infer("gather_nd", [tt((None, 4, 5)), tt((2, 7), "i32")])) == "tensor<7x5xf32>"
    assert str(infer("gather", [tt((3, None)), tt((2, 6), "i32")], axis=1)) == "tensor<2x6xf32>"
    type_error("gather", [tt((3, 4)), tt((4, 4), "i32")], r"indices dimension 0 \(4\) exceeds the data's \(3\)",
               axis=1)
    type_error("gather_nd", [tt((3, 4)), tt((3, 2), "i32")], "3 index rows after batch_dims 0 do not fit")


@pytest.mark.parametrize("reduction", ["update", "add", "mul", "min", "max"])
def test_scatter_elements_matches_onnxruntime(reduction):
    x = rand(3, 4)
    idx = np.array([[1, 0, 2, -1], [0, 2, 1, 1]], np.int64) if reduction == "update" else \
        np.array([[1, 0, 2, 0], [1, 0, 0, 3]], np.int64)
    u = rand(2, 4)
    attrs = {} if reduction == "update" else {"reduction": reduction}
    want = ort_run("ScatterElements", [x, idx, u], axis=1, **attrs)
    close(run("scatter_elements", x, idx, u, axis=1, reduction=reduction), want)


def test_one_hot():
    i = np.array([[0, 3], [2, 9]], np.int32)
    out = run("one_hot", i, np.float32(5), np.float32(-1), depth=4)
    want = np.where(i[..., None] == np.arange(4), 5.0, -1.0)
    assert out.shape == (2, 2, 4) and (out == want).all()
    out = run("one_hot", i, np.int32(1), np.int32(0), depth=4, axis=0, dtype="float32")
    assert out.dtype == np.float32 and (out == np.moveaxis(want > 0, -1, 0)).all()
    assert str(infer("one_hot", [tt((None,), "i64"), tt((), "f32"), tt((), "f32")], depth=10)) == \
        "tensor<?x10xf32>"
    type_error("one_hot", [tt((2,), "i32"), tt((2,)), tt(())], "expects a single-element on_value", depth=3)


def test_scatter_nd_and_argwhere_match_onnxruntime():
    x = rand(4, 3)
    idx = np.array([[0], [3], [1]], np.int64)          # ONNX order: (..., M)
    u = rand(3, 3)
    close(run("scatter_nd", x, idx.T, u), ort_run("ScatterND", [x, idx, u]))
    dup = np.array([[0], [0], [2]], np.int64)
    close(run("scatter_nd", x, dup.T, u, mode="add"), ort_run("ScatterND", [x, dup, u], reduction="add"))
    c = rand(3, 4) > 0
    w = run("argwhere", c)
    assert w.dtype == np.int32 and (w.T == ort_run("NonZero", [c], out_dtype=np.int64)).all()
    assert str(infer("argwhere", [tt((None, 4), "i1")])) == "tensor<?x2xi32>"
    type_error("scatter_nd", [tt((3, 4)), tt((1, 2), "i32"), tt((3, 4))], r"updates must have the shape \[2, 4\]")


@pytest.mark.parametrize("largest", [1, 0])
def test_topk_sort_argsort(largest):
    x = np.array([[3, 1, 3, 0, 2, 3], [5, 5, 1, 1, 0, 9]], np.float32)
    v, i = run("topk", x, k=3, is_ascend=not largest, dtype="int64")
    ov, oi = ort_run("TopK", [x, np.array([3], np.int64)], n_out=2, out_dtype=[np.float32, np.int64],
                     largest=largest)
    assert (v == ov).all() and (i == oi).all() and i.dtype == np.int64
    assert run("topk", x, k=0, ret_type="values").shape == (2, 6)
    s = run("sort", x, is_ascend=bool(not largest))
    assert (s == (np.sort(x) if not largest else -np.sort(-x))).all()
    a = run("argsort", x, axis=0, is_ascend=bool(not largest))
    assert (np.take_along_axis(x, a, axis=0) == (np.sort(x, axis=0) if not largest else -np.sort(-x, axis=0))).all()
    assert str(infer("topk", [tt((None, 6))], k=2)) == "tuple<tensor<?x2xf32>, tensor<?x2xi32>>"
    type_error("topk", [tt((2, 6))], "k = 7 is larger than the axis' size 6", k=7)


def test_cumsum_cumprod():
    x = rand(3, 4, dtype=np.int32, low=-3, high=4)
    assert (run("cumsum", x, axis=1) == np.cumsum(x, axis=1)).all()
    assert (run("cumsum", x, axis=0, exclusive=True) == np.cumsum(x, axis=0) - x).all()
    assert (run("cumsum", x) == np.cumsum(x)).all()
    assert run("cumsum", x, dtype="int64").dtype == np.int64
    assert (run("cumprod", x, axis=-1) == np.cumprod(x, axis=-1)).all()
    assert str(infer("cumsum", [tt((None, 4))])) == "tensor<?xf32>"
    type_error("cumsum", [tt((3, 4))], "axis 2 is out of range", axis=2)


def test_einsum_and_reverse_sequence():
    a, b = rand(2, 3, 4), rand(4, 5)
    close(run("einsum", a, b, equation="bij,jk->bik"), np.einsum("bij,jk->bik", a, b))
    close(run("einsum", a, equation="bij->j"), np.einsum("bij->j", a))
    close(run("einsum", a, b, equation="...j,jk"), np.einsum("...j,jk", a, b))
    m = rand(3, 3)
    close(run("einsum", m, equation="ii"), np.trace(m))
    assert str(infer("einsum", [tt((None, 3, 4)), tt((4, 5))], equation="bij,jk->bik")) == "tensor<?x3x5xf32>"
    type_error("einsum", [tt((2, 3)), tt((4, 5))], "label 'j' has two sizes: 3 vs 4", equation="ij,jk->ik")
    type_error("einsum", [tt((2, 3))], "output label 'k' is not in the inputs", equation="ij->k")
    x = rand(4, 3, 2)
    lens = np.array([4, 1, 3], np.int64)
    close(run("reverse_sequence", x, lens, seq_axis=0, batch_axis=1),
          ort_run("ReverseSequence", [x, lens], time_axis=0, batch_axis=1))
    type_error("reverse_sequence", [tt((4, 3)), tt((4,), "i32")], "seq_lengths must be 1-d of the batch size 3",
               seq_axis=0, batch_axis=1)


def test_indexing_in_text():
    src = """
relay.func @main(%emb: tensor<10x4xf32>, %ids: tensor<2x3xi32>) {
  %e = take(%emb, %ids) {axis = 0}
  %s = shape_of(%e)
  %n = ndarray_size(%s)
  return %e
}"""
    emb = rand(10, 4)
    ids = np.array([[1, 2, 3], [9, 0, 0]], np.int32)
    assert (run_text(src, emb, ids) == emb[ids]).all()
