"""Convolutions: conv1d/2d/3d against a direct-loop definition (groups,
depthwise, dilation, strides, every kernel layout, blocked layouts), the
transposes against onnxruntime's ConvTranspose, type relations with
dynamic dims, and the errors."""

import itertools
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from relay_ops_helpers import close, infer, ort_run, rand, run, run_text, tt, type_error  # noqa: E402

from tvmd.dialects.relay.layouts import convert_array  # noqa: E402


def conv_loops(x, w, strides, pad, dilation, groups):
    """N-d NC.../OI... convolution by its definition, one output at a time."""
    nd = x.ndim - 2
    n, c = x.shape[:2]
    o, i = w.shape[:2]
    ks, ins = w.shape[2:], x.shape[2:]
    outs = [(ins[j] + pad[j] + pad[nd + j] - dilation[j] * (ks[j] - 1) - 1) // strides[j] + 1 for j in range(nd)]
    y = np.zeros((n, o) + tuple(outs))
    og = o // groups
    for b, oc in itertools.product(range(n), range(o)):
        g = oc // og
        for pos in itertools.product(*[range(m) for m in outs]):
            acc = 0.0
            for ic in range(i):
                for tap in itertools.product(*[range(k) for k in ks]):
                    src = [p * s + t * d - pad[j] for j, (p, s, t, d) in enumerate(zip(pos, strides, tap, dilation))]
                    if all(0 <= v < L for v, L in zip(src, ins)):
                        acc += float(x[(b, g * i + ic) + tuple(src)]) * float(w[(oc, ic) + tap])
            y[(b, oc) + pos] = acc
    return y


@pytest.mark.parametrize("strides,padding,dilation,groups", [
    ((1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((2, 1), (1, 0, 2, 1), (1, 1), 1),
    ((1, 1), (2, 2, 2, 2), (2, 2), 2),
    ((1, 2), (1, 1, 1, 1), (1, 1), 4),   # depthwise
])
def test_conv2d_nchw(strides, padding, dilation, groups):
    x, w = rand(1, 4, 6, 5), rand(4 if groups == 4 else 6, 4 // groups, 3, 3)
    want = conv_loops(x, w, strides, padding, dilation, groups)
    got = run("nn.conv2d", x, w, strides=strides, padding=padding, dilation=dilation, groups=groups)
    close(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("data_layout,kernel_layout", [
    ("NHWC", "HWIO"), ("NHWC", "OHWI"), ("NCHW", "HWOI"), ("NCHW4c", "OIHW4i4o"), ("NHWC", "HWOI")])
def test_conv2d_layouts(data_layout, kernel_layout):
    x, w = rand(1, 8, 5, 5), rand(8, 8, 3, 3)
    want = conv_loops(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    got = run("nn.conv2d", convert_array(x, "NCHW", data_layout), convert_array(w, "OIHW", kernel_layout),
              padding=[1, 1], data_layout=data_layout, kernel_layout=kernel_layout)
    close(convert_array(got, data_layout, "NCHW"), want, rtol=1e-4, atol=1e-4)
    # out_layout differs from the data's
    got = run("nn.conv2d", convert_array(x, "NCHW", data_layout), convert_array(w, "OIHW", kernel_layout),
              padding=[1, 1], data_layout=data_layout, kernel_layout=kernel_layout, out_layout="NCHW")
    close(got, want, rtol=1e-4, atol=1e-4)


def test_conv1d_and_conv3d():
    x, w = rand(2, 4, 9), rand(6, 2, 3)
    close(run("nn.conv1d", x, w, strides=2, padding=[1, 2], dilation=[2], groups=2),
          conv_loops(x, w, (2,), (1, 2), (2,), 2), rtol=1e-4, atol=1e-4)
    close(convert_array(run("nn.conv1d", x.transpose(0, 2, 1), w.transpose(2, 1, 0), data_layout="NWC",
                            kernel_layout="WIO", groups=2), "NWC", "NCW"),
          conv_loops(x, w, (1,), (0, 0), (1,), 2), rtol=1e-4, atol=1e-4)
    x3, w3 = rand(1, 2, 4, 5, 3), rand(3, 2, 2, 3, 2)
    close(run("nn.conv3d", x3, w3, padding=[1, 0, 1], strides=[1, 2, 1]),
          conv_loops(x3, w3, (1, 2, 1), (1, 0, 1, 1, 0, 1), (1, 1, 1), 1), rtol=1e-4, atol=1e-4)
    got = run("nn.conv3d", x3.transpose(0, 2, 3, 4, 1), w3.transpose(2, 3, 4, 1, 0), data_layout="NDHWC",
              kernel_layout="DHWIO")
    close(got.transpose(0, 4, 1, 2, 3), conv_loops(x3, w3, (1, 1, 1), (0,) * 6, (1, 1, 1), 1), rtol=1e-4, atol=1e-4)


def test_int8_conv_accumulates_in_out_dtype():
    x = rand(1, 3, 4, 4, dtype=np.int8, low=-128, high=127)
    w = rand(2, 3, 3, 3, dtype=np.int8, low=-128, high=127)
    got = run("nn.conv2d", x, w, out_dtype="int32")
    assert got.dtype == np.int32 and (got == conv_loops(x, w, (1, 1), (0,) * 4, (1, 1), 1)).all()


@pytest.mark.parametrize("strides,pads,dilation,output_padding,groups", [
    ((1, 1), (0, 0, 0, 0), (1, 1), (0, 0), 1),
    ((2, 2), (1, 1, 1, 1), (1, 1), (1, 1), 1),
    ((2, 3), (0, 1, 2, 0), (1, 2), (1, 0), 2),
    ((3, 1), (1, 0, 0, 1), (2, 1), (2, 0), 1),
])
def test_conv2d_transpose_matches_onnxruntime(strides, pads, dilation, output_padding, groups):
    x, w = rand(1, 4, 4, 3), rand(4, 3, 3, 2)     # IOHW: 4 in, 3 out per group
    want = ort_run("ConvTranspose", [x, w], strides=list(strides), pads=list(pads), dilations=list(dilation),
                   output_padding=list(output_padding), group=groups)
    got = run("nn.conv2d_transpose", x, w, strides=strides, padding=pads, dilation=dilation,
              output_padding=output_padding, groups=groups)
    close(got, want, rtol=1e-4, atol=1e-4)


def test_conv1d_and_conv3d_transpose_match_onnxruntime():
    x, w = rand(2, 3, 5), rand(3, 2, 4)
    close(run("nn.conv1d_transpose", x, w, strides=[2], padding=[1, 0], output_padding=[1]),
          ort_run("ConvTranspose", [x, w], strides=[2], pads=[1, 0], output_padding=[1]), rtol=1e-4, atol=1e-4)
    x3, w3 = rand(1, 2, 3, 2, 3), rand(2, 2, 2, 2, 2)
    close(run("nn.conv3d_transpose", x3, w3, strides=[2, 1, 2]),
          ort_run("ConvTranspose", [x3, w3], strides=[2, 1, 2]), rtol=1e-4, atol=1e-4)


def test_conv_type_relations():
    assert str(infer("nn.conv2d", [tt((None, 3, None, 224)), tt((64, 3, 7, 7))], strides=[2, 2], padding=[3, 3])) \
        == "tensor<?x64x?x112xf32>"
    assert str(infer("nn.conv2d", [tt((1, 56, 56, 64)), tt((3, 3, 64, 1))], padding=[1], groups=64,
                     data_layout="NHWC", kernel_layout="HWOI")) == "tensor<1x56x56x64xf32>"
    assert str(infer("nn.conv2d", [tt((1, 4, 8, 8, 16)), tt((2, 4, 3, 3, 16, 16))], padding=[1],
                     data_layout="NCHW16c", kernel_layout="OIHW16i16o")) == "tensor<1x2x8x8x16xf32>"
    assert str(infer("nn.conv2d_transpose", [tt((1, 8, 7, 7)), tt((8, 4, 3, 3))], strides=[2, 2], padding=[1, 1],
                     output_padding=[1, 1])) == "tensor<1x4x14x14xf32>"
    assert str(infer("nn.conv1d", [tt((1, 4, 10)), tt((8, 4, 3))])) == "tensor<1x8x8xf32>"
    assert str(infer("nn.conv3d", [tt((1, 4, 5, 6, 7)), tt((8, 4, 3, 3, 3))], padding=[1])) == "tensor<1x8x5x6x7xf32>"


def test_conv_errors():
    type_error("nn.conv2d", [tt((1, 4, 8, 8)), tt((6, 3, 3, 3))],
               r"data has 4 channels but the kernel takes 3 per group x 1 group\(s\)")
    type_error("nn.conv2d", [tt((1, 4, 8, 8)), tt((6, 1, 3, 3))], "6 output channels do not divide into 4 groups",
               groups=4)
    type_error("nn.conv2d", [tt((1, 4, 2, 2)), tt((6, 4, 3, 3))], "output would be empty along H")
    type_error("nn.conv2d", [tt((1, 4, 8, 8)), tt((6, 4, 3, 3))], "data_layout NCW is not a layout of N, C and H, W",
               data_layout="NCW")
    type_error("nn.conv2d", [tt((1, 4, 8, 8)), tt((6, 4, 3, 3))], "kernel_size = \\[5, 5\\] but the kernel is 3x3",
               kernel_size=[5, 5])
    type_error("nn.conv2d", [tt((1, 4, 8)), tt((6, 4, 3, 3))], "expects 4-d data")
    type_error("nn.conv2d_transpose", [tt((1, 4, 8, 8)), tt((4, 2, 3, 3))],
               "output_padding \\[2, 0\\] must be non-negative and smaller than the strides", output_padding=[2, 0])
    type_error("nn.conv2d", [tt((1, 6, 8, 8, 4)), tt((2, 6, 3, 3, 4, 4))],
               "axis C of size 8 does not split by 16", data_layout="NCHW4c", kernel_layout="OIHW4i4o",
               out_layout="NCHW16c")


def test_conv2d_text_prints_normalised_padding():
    src = """
relay.func @main(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>) {
  %c = nn.conv2d(%x, %w) {padding = [1, 1], channels = 3}
  return %c
}"""
    x, w = rand(1, 2, 5, 5), rand(3, 2, 3, 3)
    close(run_text(src, x, w), conv_loops(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1), rtol=1e-4, atol=1e-4)
