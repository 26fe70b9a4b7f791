"""--quantize end to end: options, annotation rules, realize to qnn and to
integer arithmetic (bit-identical), accuracy on a small ResNet-style CNN,
and the command line."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from tools import tvm_opt  # noqa: E402

from tvmd.dialects.relay.interpreter import run_function  # noqa: E402
from tvmd.dialects.relay.passes.quantize import Quantize, quantize, run_passes  # noqa: E402
from tvmd.testing.quantize_models import random_inputs, resnet_like  # noqa: E402
from tvmd.ir import diagnostics as D  # noqa: E402
from tvmd.ir.pass_manager import PassContext, PassOptionError  # noqa: E402
from tvmd.ir.printer import print_module  # noqa: E402
from tvmd.parser import parse_module  # noqa: E402

SMALL = """relay.func @main(%x: tensor<2x3x8x8xf32>) -> tensor<2x5xf32> {
  %w0 = constant dense<0.25> : tensor<4x3x3x3xf32>
  %w1 = constant dense<[[[[0.5]], [[-0.25]], [[0.125]], [[1.0]]], [[[-0.5]], [[0.75]], [[0.25]], [[-1.0]]],
                        [[[0.3]], [[0.2]], [[-0.1]], [[0.05]]], [[[0.9]], [[-0.6]], [[0.4]], [[0.2]]]]>
                        : tensor<4x4x1x1xf32>
  %b1 = constant dense<[0.1, 0.2, -0.3, 0.4]> : tensor<4xf32>
  %fc = constant dense<0.1> : tensor<5x64xf32>
  %c0 = nn.conv2d(%x, %w0) {padding = [1, 1]}
  %r0 = nn.relu(%c0)
  %c1 = nn.conv2d(%r0, %w1)
  %a1 = nn.bias_add(%c1, %b1)
  %r1 = nn.relu(%a1)
  %s = add(%r1, %r0)
  %p = nn.max_pool2d(%s) {pool_size = [2, 2], strides = [2, 2]}
  %f = nn.batch_flatten(%p)
  %d = nn.dense(%f, %fc)
  return %d
}"""


# multiply, clip, add of a scalar, concatenate, avg_pool2d, transpose and
# reshape on integers (per-channel scales made per-tensor where needed)
MORE_OPS = """relay.func @main(%x: tensor<2x3x8x8xf32>) {
  %w0 = constant dense<[[[[0.5, -0.2, 0.1], [0.3, 0.9, -0.4], [0.2, 0.1, 0.0]]],
                        [[[-0.5, 0.7, 0.1], [0.3, -0.9, 0.4], [0.25, 0.1, 0.6]]],
                        [[[0.05, 0.02, 0.1], [0.03, 0.09, -0.04], [0.02, 0.01, 0.06]]],
                        [[[1.5, -1.2, 0.1], [0.3, 0.2, -0.4], [0.8, 0.1, 0.3]]]]> : tensor<4x1x3x3xf32>
  %w1 = constant dense<[[[[0.5]], [[-0.25]], [[0.125]], [[1.0]]], [[[-0.5]], [[0.75]], [[0.25]], [[-1.0]]],
                        [[[0.3]], [[0.2]], [[-0.1]], [[0.05]]], [[[0.9]], [[-0.6]], [[0.4]], [[0.2]]]]>
                        : tensor<4x4x1x1xf32>
  %k = constant dense<0.5> : tensor<f32>
  %x1 = strided_slice(%x) {begin = [0, 0, 0, 0], end = [2, 1, 8, 8]}
  %c0 = nn.conv2d(%x1, %w0) {padding = [1, 1]}
  %rl = nn.relu(%c0)
  %kc = constant dense<[[[0.5]], [[2.0]], [[-1.0]], [[0.25]]]> : tensor<4x1x1xf32>
  %m = multiply(%rl, %kc)
  %cl = clip(%m) {a_min = -2.0, a_max = 3.0}
  %c1 = nn.conv2d(%cl, %w1)
  %a = add(%c1, %k)
  %cat = concatenate(%a, %c1) {axis = 1}
  %p = nn.avg_pool2d(%cat) {pool_size = [2, 2], strides = [2, 2]}
  %t = transpose(%p) {axes = [0, 2, 3, 1]}
  %r = reshape(%t) {newshape = [2, -1]}
  return %r
}"""


def small_inputs(n, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((2, 3, 8, 8)).astype(np.float32) for _ in range(n)]


def quantized(text=SMALL, **options):
    m = parse_module(text, "m.relay")
    calib = options.pop("calib", small_inputs(3, 1))
    quantize(m, dataset=[{"x": x} for x in calib], **options)
    return m


def ops_of(m):
    return [op.name for op in m.body.first.body.ops]


# -- options --------------------------------------------------------------------------------------

def test_options_are_tvms_qconfig():
    p = Quantize()
    assert (p.nbit_input, p.nbit_weight, p.nbit_activation) == (8, 8, 32)
    assert (p.dtype_input, p.dtype_weight, p.dtype_activation) == ("int8", "int8", "int32")
    assert (p.calibrate_mode, p.global_scale, p.weight_scale) == ("global_scale", 8.0, "power2")
    assert p.skip_conv_layers == [0] and p.skip_dense_layer and p.rounding == "UPWARD"
    q = Quantize.from_options("weight-scale=max skip-conv-layers=1,2 per-channel=true realize-to=qnn")
    assert q.weight_scale == "max" and q.skip_conv_layers == [1, 2] and q.per_channel and q.realize_to == "qnn"
    assert Quantize.from_options("skip-conv-layers=").skip_conv_layers == []


@pytest.mark.parametrize("text,message", [
    ("calibrate-mode=minmax", "calibrate-mode must be one of global_scale, kl_divergence, percentile"),
    ("weight-scale=mean", "weight-scale must be one of power2, max"),
    ("rounding=DOWN", "rounding must be one of UPWARD, TONEAREST"),
    ("dtype-input=uint8", "dtype-input must be a signed integer type"),
    ("nbit-input=12", "nbit-input = 12 does not fit dtype-input = int8"),
    ("dtype-activation=int16 nbit-activation=16", "dtype-activation must be int32"),
    ("global-scale=0", "global-scale must be positive"),
    ("calibrate-mode=kl_divergence", "calibrate-mode=kl_divergence needs calibration data"),
    ("dataset=/no/such/file.npz", "dataset '/no/such/file.npz' does not exist"),
    ("realize-to=tir", "realize-to must be one of qnn, integer"),
    ("nbits=8", "pass 'quantize' has no option 'nbits'"),
])
def test_bad_options(text, message):
    with pytest.raises(PassOptionError, match=message):
        Quantize.from_options(text)


def test_a_missing_prerequisite_pass_is_skipped_with_a_warning():
    m = parse_module(SMALL, "m.relay")
    with D.collect() as got:
        run_passes(m, PassContext(), ("no-such-pass",))
    assert [d.severity for d in got] == ["warning"]
    assert "pass 'no-such-pass' is not available" in got[0].message


# -- annotate ---------------------------------------------------------------------------------------

def sq_kinds(m):
    return [(op.operands[0].name, op.attributes["kind"]) for op in m.body.first.body.ops
            if op.name == "relay.annotation.simulated_quantize"]


def test_annotation_follows_tvms_rules():
    # conv2d #0 skipped (the default): its input stays float, its output is
    # quantized as conv2d #1's input; the bias is a weight; the residual
    # add's float side becomes an input; max_pool takes its input in 8 bits;
    # nn.dense is skipped (skip_dense_layer)
    m = quantized(do_simulation=True)
    assert sq_kinds(m) == [("r0", "input"), ("w1", "weight"), ("b1", "weight"), ("s", "input")]
    m = quantized(do_simulation=True, skip_conv_layers=[], skip_dense_layer=False)
    kinds = sq_kinds(m)
    assert ("x", "input") in kinds and ("w0", "weight") in kinds and ("fc", "weight") in kinds
    m = quantized(do_simulation=True, skip_conv_layers=[], debug_enabled_ops=["nn.conv2d"])
    assert [k for _, k in sq_kinds(m)] == ["input", "weight", "input", "weight"]


def test_global_avg_pool_stops_quantization():
    text = SMALL.replace("%p = nn.max_pool2d(%s) {pool_size = [2, 2], strides = [2, 2]}",
                         "%g = nn.global_avg_pool2d(%s)\n  %c2 = nn.conv2d(%g, %w1)\n  %p = nn.max_pool2d(%c2)"
                         " {pool_size = [1, 1]}").replace("tensor<5x64xf32>", "tensor<5x4xf32>")
    m = quantized(text, do_simulation=True)
    assert [k for n, k in sq_kinds(m)] == ["input", "weight", "weight"]   # nothing after the pool


def test_per_channel_weights_get_an_axis_and_a_scale_each():
    m = quantized(do_simulation=True, per_channel=True)
    ops = [op for op in m.body.first.body.ops if op.name == "relay.annotation.simulated_quantize"
           and op.operands[0].name == "w1"]
    assert ops[0].attributes["axis"] == 0
    scales = ops[0].operands[1].defining_op().attributes["value"].array
    np.testing.assert_allclose(scales, [1.0 / 128, 1.0 / 128, 0.5 / 128, 1.0 / 128])   # power2 per channel


# -- realize and lower ---------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["global_scale", "kl_divergence", "percentile"])
@pytest.mark.parametrize("per_channel", [False, True])
def test_qnn_and_integer_graphs_agree_bit_for_bit(mode, per_channel):
    opts = dict(calibrate_mode=mode, per_channel=per_channel, skip_conv_layers=[], skip_dense_layer=False)
    mq = quantized(realize_to="qnn", **opts)
    mi = quantized(**opts)
    assert any(n.startswith("relay.qnn.") for n in ops_of(mq))
    assert not any(n.startswith("relay.qnn.") or "simulated" in n for n in ops_of(mi))
    f = parse_module(SMALL, "m.relay")
    for x in small_inputs(2, 7):
        q, i = run_function(mq, "main", x), run_function(mi, "main", x)
        np.testing.assert_array_equal(q, i)
        ref = run_function(f, "main", x)
        assert np.linalg.norm(q - ref) / np.linalg.norm(ref) < 0.25    # 3 tiny calibration samples


@pytest.mark.parametrize("per_channel", [False, True])
def test_more_ops_run_on_integers(per_channel):
    opts = dict(per_channel=per_channel, skip_conv_layers=[], calibrate_mode="percentile")
    mq, mi = quantized(MORE_OPS, realize_to="qnn", **opts), quantized(MORE_OPS, **opts)
    names = ops_of(mq)
    for op in ("multiply", "clip", "add", "concatenate", "nn.avg_pool2d", "transpose", "reshape"):
        i = names.index("relay." + op)
        assert str(list(mq.body.first.body.ops)[i].results[0].type).endswith("xi32>"), op
    f = parse_module(MORE_OPS, "m.relay")
    for x in small_inputs(2, 5):
        q = run_function(mq, "main", x)
        np.testing.assert_array_equal(q, run_function(mi, "main", x))
        ref = run_function(f, "main", x)
        assert np.linalg.norm(q - ref) / np.linalg.norm(ref) < 0.05


def test_weights_are_quantized_once_and_conv_runs_on_int8():
    m = quantized(skip_conv_layers=[])
    text = print_module(m)
    assert "tensor<4x4x1x1xi8>" in text and "tensor<4x4x1x1xf32>" not in text
    convs = [op for op in m.body.first.body.ops if op.name == "relay.nn.conv2d"]
    assert all(str(op.operands[0].type).endswith("xi8>") and str(op.results[0].type).endswith("xi32>")
               for op in convs)


def test_nbit_below_the_dtype_clips():
    m = quantized(realize_to="qnn", nbit_input=4, skip_conv_layers=[])
    clips = [op for op in m.body.first.body.ops if op.name == "relay.clip"]
    assert clips and all(op.attributes["a_max"] == 7.0 for op in clips)


def test_quantize_needs_main():
    m = parse_module(SMALL.replace("@main", "@other"), "m.relay")
    with pytest.raises(D.DiagnosticError, match="has no relay.func @main"):
        quantize(m)


# -- accuracy on the CNN --------------------------------------------------------------------------------

def test_cnn_kl_per_channel_accuracy():
    # 100 inputs, calibrated on 100 others; bench/quantize_accuracy.py has the full table
    m = resnet_like(batch=100, width=8, seed=0)
    calib, inputs = random_inputs(1, 100, 10)[0], random_inputs(1, 100, 20)[0]
    want = run_function(m, "main", inputs)
    quantize(m, dataset=[{"x": calib}], calibrate_mode="kl_divergence", per_channel=True)
    got = run_function(m, "main", inputs)
    rel = np.linalg.norm(got - want) / np.linalg.norm(want)
    top1 = np.mean(got.argmax(1) == want.argmax(1))
    assert len(set(want.argmax(1))) >= 5            # the classes vary with the input
    assert rel <= 0.1 and top1 >= 0.9, (rel, top1)  # measured: 0.073 and 0.96


# -- the command line ------------------------------------------------------------------------------------

def test_command_line(tmp_path):
    src = tmp_path / "m.relay"
    src.write_text(SMALL)
    np.savez(tmp_path / "calib.npz", x=np.stack(small_inputs(4, 3)))
    r = tvm_opt(str(src), f"--quantize=calibrate-mode=percentile dataset={tmp_path / 'calib.npz'}",
                "--pass-statistics")
    assert r.returncode == 0, r.stderr
    assert "right_shift" in r.stdout and "qnn." not in r.stdout
    assert "quantize-points" in r.stderr
    np.savez(tmp_path / "bad.npz", input=np.zeros((2, 3, 8, 8)))
    r = tvm_opt(str(src), f"--quantize=calibrate-mode=percentile dataset={tmp_path / 'bad.npz'}")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "array 'input' names no parameter of @main (parameters: x)" in r.stderr


# -- with the other passes ------------------------------------------------------------------------------

def run_pipeline(m, pipeline):
    from tvmd.ir.pass_manager import PassManager, instantiate, parse_pipeline
    from tvmd.ir.registry import get_pass_class
    PassManager(instantiate(parse_pipeline(pipeline), get_pass_class)).run(m)
    return m


@pytest.mark.parametrize("realize_to,pipeline", [
    ("qnn", "convert-layout{qnn.conv2d=NHWC}"),          # the qnn ops' layout rules
    ("integer", "convert-layout{nn.conv2d=NHWC}"),
    ("integer", "fold-constant,cse,dce,fuse-ops"),         # the integer ops' pattern kinds
])
def test_quantized_graphs_survive_layout_and_fusion(realize_to, pipeline):
    m = quantized(MORE_OPS, realize_to=realize_to, per_channel=True, skip_conv_layers=[])
    xs = small_inputs(2, 9)
    want = [run_function(m, "main", x) for x in xs]
    run_pipeline(m, pipeline)
    for x, w in zip(xs, want):
        np.testing.assert_array_equal(run_function(m, "main", x), w)
