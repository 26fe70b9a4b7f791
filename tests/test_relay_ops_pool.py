"""Pools: window pools against onnxruntime (ceil_mode, count_include_pad,
dilation, padding), layouts, global and adaptive pools against loops,
type relations with dynamic dims, errors."""

import itertools
import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from relay_ops_helpers import close, infer, ort_run, rand, run, run_text, tt, type_error  # noqa: E402

from tvmd.dialects.relay.layouts import convert_array  # noqa: E402

CASES = [   # pool_size, strides, pads (befores, afters), dilation, ceil_mode
    ((3, 3), (2, 2), (0, 0, 0, 0), (1, 1), False),
    ((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True),
    ((2, 3), (2, 1), (1, 0, 0, 2), (1, 1), True),
    ((3, 2), (1, 2), (1, 1, 0, 1), (2, 1), False),
    ((2, 2), (3, 3), (0, 0, 0, 0), (1, 1), True),
]


@pytest.mark.parametrize("ks,st,pads,dil,ceil", CASES)
def test_max_pool2d_matches_onnxruntime(ks, st, pads, dil, ceil):
    x = rand(2, 3, 7, 8)
    want = ort_run("MaxPool", [x], kernel_shape=list(ks), strides=list(st), pads=list(pads), dilations=list(dil),
                   ceil_mode=int(ceil))
    got = run("nn.max_pool2d", x, pool_size=ks, strides=st, padding=pads, dilation=dil, ceil_mode=ceil)
    close(got, want)


@pytest.mark.parametrize("ks,st,pads,dil,ceil", [c for c in CASES if c[3] == (1, 1)])
@pytest.mark.parametrize("include", [False, True])
def test_avg_pool2d_matches_onnxruntime(ks, st, pads, dil, ceil, include):
    x = rand(1, 2, 7, 8)
    want = ort_run("AveragePool", [x], kernel_shape=list(ks), strides=list(st), pads=list(pads),
                   ceil_mode=int(ceil), count_include_pad=int(include))
    got = run("nn.avg_pool2d", x, pool_size=ks, strides=st, padding=pads, ceil_mode=ceil, count_include_pad=include)
    close(got, want)


def test_ceil_mode_drops_a_window_that_starts_in_the_padding():
    # ceil((5 + 2 - 2) / 2) + 1 = 4, but the 4th window would start in the
    # trailing padding: 3, as onnxruntime and PyTorch (TVM said 4 and -inf)
    x = rand(1, 1, 5, 5)
    assert str(infer("nn.max_pool2d", [tt((1, 1, 5, 5))], pool_size=[2, 2], strides=[2, 2], padding=[1],
                     ceil_mode=True)) == "tensor<1x1x3x3xf32>"
    close(run("nn.max_pool2d", x, pool_size=[2, 2], strides=[2, 2], padding=[1], ceil_mode=True),
          ort_run("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1))


def test_pool_layouts_and_1d_3d():
    x = rand(1, 8, 6, 6)
    want = run("nn.max_pool2d", x, pool_size=[3, 3], strides=[2, 2], padding=[1])
    for lay in ("NHWC", "NCHW4c"):
        got = run("nn.max_pool2d", convert_array(x, "NCHW", lay), pool_size=[3, 3], strides=[2, 2], padding=[1],
                  layout=lay)
        close(convert_array(got, lay, "NCHW"), want)
    got = run("nn.avg_pool2d", convert_array(x, "NCHW", "NHWC"), pool_size=[2, 2], layout="NHWC", out_layout="NCHW")
    close(got, run("nn.avg_pool2d", x, pool_size=[2, 2]))
    x1 = rand(2, 3, 9)
    close(run("nn.max_pool1d", x1, pool_size=3, strides=2, padding=[1]),
          ort_run("MaxPool", [x1], kernel_shape=[3], strides=[2], pads=[1, 1]))
    close(run("nn.avg_pool1d", x1, pool_size=[2], padding=[1, 0], count_include_pad=True),
          ort_run("AveragePool", [x1], kernel_shape=[2], pads=[1, 0], count_include_pad=1))
    x3 = rand(1, 2, 4, 5, 6)
    close(run("nn.max_pool3d", x3, pool_size=[2, 2, 3], strides=[2, 2, 2], ceil_mode=True),
          ort_run("MaxPool", [x3], kernel_shape=[2, 2, 3], strides=[2, 2, 2], ceil_mode=1))
    close(run("nn.avg_pool3d", x3, pool_size=[2, 3, 2], padding=[1, 1, 0]),
          ort_run("AveragePool", [x3], kernel_shape=[2, 3, 2], pads=[1, 1, 0, 1, 1, 0]))


def test_integer_max_pool():
    x = rand(1, 2, 5, 5, dtype=np.int8, low=-128, high=127)
    got = run("nn.max_pool2d", x, pool_size=[2, 2], padding=[1])
    want = np.max(np.stack([np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], constant_values=-128)
                            [:, :, i:i + 6, j:j + 6] for i in range(2) for j in range(2)]), axis=0)
    assert got.dtype == np.int8 and (got == want).all()


def adaptive_loops(x, outs, fn):
    ins = x.shape[2:]
    out = np.empty(x.shape[:2] + tuple(outs))
    for cell in itertools.product(*[range(n) for n in outs]):
        idx = tuple(slice(i * L // n, math.ceil((i + 1) * L / n)) for i, L, n in zip(cell, ins, outs))
        for b, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
            out[(b, c) + cell] = fn(x[(b, c) + idx])
    return out


def test_global_and_adaptive_pools():
    x = rand(2, 3, 7, 5)
    close(run("nn.global_avg_pool2d", x), x.mean(axis=(2, 3), keepdims=True))
    close(run("nn.global_max_pool2d", x), x.max(axis=(2, 3), keepdims=True))
    close(run("nn.global_avg_pool2d", x.transpose(0, 2, 3, 1), layout="NHWC"),
          x.mean(axis=(2, 3), keepdims=True).transpose(0, 2, 3, 1))
    close(run("nn.adaptive_avg_pool2d", x, output_size=[3, 2]), adaptive_loops(x, (3, 2), np.mean))
    close(run("nn.adaptive_max_pool2d", x, output_size=[4]), adaptive_loops(x, (4, 4), np.max))
    close(run("nn.adaptive_avg_pool2d", x), x)   # unset output_size keeps the input size
    x1 = rand(1, 2, 10)
    close(run("nn.adaptive_avg_pool1d", x1, output_size=[3]), adaptive_loops(x1, (3,), np.mean))
    x3 = rand(1, 1, 4, 5, 3)
    close(run("nn.adaptive_max_pool3d", x3, output_size=[2, 3, 2]), adaptive_loops(x3, (2, 3, 2), np.max))


def test_pool_type_relations():
    assert str(infer("nn.max_pool2d", [tt((None, 64, 112, None))], pool_size=[3, 3], strides=[2, 2],
                     padding=[1])) == "tensor<?x64x56x?xf32>"
    assert str(infer("nn.global_avg_pool2d", [tt((None, 7, 7, 512))], layout="NHWC")) == "tensor<?x1x1x512xf32>"
    assert str(infer("nn.adaptive_avg_pool2d", [tt((1, 3, None, 9))], output_size=[2, 3])) == "tensor<1x3x2x3xf32>"
    type_error("nn.max_pool2d", [tt((1, 3, 2, 2))], "output would be empty along H", pool_size=[3, 3])
    type_error("nn.max_pool2d", [tt((1, 3, 8))], "expects 4-d data in layout NCHW", pool_size=[2, 2])
    type_error("nn.avg_pool2d", [tt((1, 3, 8, 8))], "layout NCW is not a layout of N, C and H, W", pool_size=[2, 2],
               layout="NCW")
    type_error("nn.adaptive_avg_pool2d", [tt((1, 3, 8, 8))], "output_size must have 1 or 2 values",
               output_size=[1, 2, 3])


def test_pool_text():
    src = """
relay.func @main(%x: tensor<1x2x6x6xf32>) {
  %p = nn.max_pool2d(%x) {pool_size = [3, 3], strides = [2, 2], padding = [1, 1], ceil_mode = true}
  %a = nn.avg_pool2d(%p) {pool_size = [2, 2], count_include_pad = true}
  %g = nn.global_avg_pool2d(%a)
  return %g
}"""
    x = rand(1, 2, 6, 6)
    p = ort_run("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
    a = ort_run("AveragePool", [p], kernel_shape=[2, 2], count_include_pad=1)
    close(run_text(src, x), a.mean(axis=(2, 3), keepdims=True))
