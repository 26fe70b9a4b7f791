"""Tuning a whole model: the default schedules are templates, tasks are
extracted per workload (equal kernels share one), the trial budget is
spread by each task's share of the time, and the log is applied by build,
tvm-run and the ONNX backend."""

import subprocess
import sys

import numpy as np
import pytest

from tvmd.autotvm.extract import allocate_trials, extract_from_relay
from tvmd.autotvm.record import load
from tvmd.autotvm.space import templates
from tvmd.parser import parse_module

CNN = """relay.func @main(%x: tensor<1x8x12x12xf32>) -> tensor<1x16x12x12xf32> {
  %w1 = constant dense<0.05> : tensor<16x8x3x3xf32>
  %w2 = constant dense<0.02> : tensor<16x16x3x3xf32>
  %w3 = constant dense<-0.03> : tensor<16x16x3x3xf32>
  %0 = nn.conv2d(%x, %w1) {padding = [1, 1, 1, 1]} : tensor<1x16x12x12xf32>
  %1 = nn.relu(%0) : tensor<1x16x12x12xf32>
  %2 = nn.conv2d(%1, %w2) {padding = [1, 1, 1, 1]} : tensor<1x16x12x12xf32>
  %3 = nn.relu(%2) : tensor<1x16x12x12xf32>
  %4 = nn.conv2d(%3, %w3) {padding = [1, 1, 1, 1]} : tensor<1x16x12x12xf32>
  %5 = nn.relu(%4) : tensor<1x16x12x12xf32>
  return %5
}
"""

DENSE = """relay.func @main(%x: tensor<32x64xf32>, %w: tensor<64x48xf32>) -> tensor<32x48xf32> {
  %0 = nn.matmul(%x, %w) : tensor<32x48xf32>
  %1 = nn.relu(%0) : tensor<32x48xf32>
  return %1
}
"""


def tool(name, *args):
    code = f"import sys; from tvmd.tools.{name} import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True)


def test_default_schedules_are_templates_whose_defaults_are_todays_choice():
    from tvmd.ir.pass_manager import PassManager, instantiate, parse_pipeline
    from tvmd.ir.registry import get_pass_class
    m = parse_module(DENSE)
    # an AVX2 CPU (16 vector registers of 8 floats) whatever the host
    pipeline = 'fuse-ops,lower-relay-to-te{target="llvm -mcpu=haswell"}'
    PassManager(instantiate(parse_pipeline(pipeline), get_pass_class)).run(m)
    ((func, space),) = templates(m)
    assert {k.name for k in space.knobs} == {"T_relu.cols", "T_relu.rows"}
    d = space.default().values
    # the GEMM tile: 48 columns take two vectors, 32 rows 4 (6 would fill 12 registers but does not divide)
    assert d == {"T_relu.cols": 16, "T_relu.rows": 4}
    for k in space.knobs:   # every candidate divides its axis: every config is as legal as the default
        extent = 48 if k.name.endswith("cols") else 32
        assert all(extent % c == 0 for c in k.candidates)


def test_equal_kernels_share_one_task_weighted_by_calls():
    tasks, weights, skipped = extract_from_relay(parse_module(CNN))
    convs = [(t, w) for t, w in zip(tasks, weights) if "conv2d" in t.name]
    assert not skipped
    # conv1 (8 -> 16 channels) and conv2 = conv3 (16 -> 16, one task for both calls)
    assert sorted(w for _, w in convs) == [1, 2]
    assert all(t.name == "fused_nn_conv2d_nn_relu" for t, _ in convs)   # the uniquing suffix dropped


def test_allocate_trials_follows_the_time_shares():
    assert allocate_trials(100, [3.0, 1.0], [1000, 1000]) == [75, 25]
    # a task whose space is small gives the rest away
    assert allocate_trials(100, [3.0, 1.0], [10, 1000]) == [10, 90]
    # everyone gets the floor, even with a tiny share
    a = allocate_trials(10, [1000.0, 1e-6, 1e-6], [100, 100, 100])
    assert sum(a) == 10 and min(a) >= 1 and a[0] == 8
    assert allocate_trials(5, [1.0, 1.0], [2, 2]) == [2, 2]   # never past the spaces


def test_tvm_tune_a_model_then_run_it_with_the_log(tmp_path):
    src = tmp_path / "dense.relay"
    src.write_text(DENSE)
    log = tmp_path / "tune.json"
    png = tmp_path / "curve.png"
    r = tool("tune_main", src, "--trials", 6, "--log", log, "--tuner", "random", "--min-repeat-ms", 1,
             "--plot", png)
    assert r.returncode == 0, r.stderr
    assert "fused_nn_matmul_nn_relu" in r.stdout and "model latency:" in r.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    recs = load(log)
    assert len(recs) == 9 and all(x.ok for x in recs)   # 6 trials, the 3 fastest measured again
    timings = {}
    for x in recs:
        timings.setdefault(x.index, []).append(x.mean_cost)
    best = next(x for x in recs if x.index == min(timings, key=lambda i: sum(timings[i]) / len(timings[i])))

    # build(tuning_log=) gives the kernel the best config, and the same answer as numpy
    from tvmd.ir.printer import print_module
    from tvmd.runtime.build import build
    cm = build(DENSE, tuning_log=str(log), progress=False)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 64)).astype(np.float32)
    w = rng.standard_normal((64, 48)).astype(np.float32)
    np.testing.assert_allclose(cm.run(x, w), np.maximum(x @ w, 0), rtol=1e-4, atol=1e-4)
    v = best.values()
    from tvmd.ir.pass_manager import PassManager, instantiate, parse_pipeline
    from tvmd.ir.registry import get_pass_class
    from tvmd.autotvm.dispatch import HistoryBest, apply_best
    m = parse_module(DENSE)
    PassManager(instantiate(parse_pipeline("fuse-ops,lower-relay-to-te"), get_pass_class)).run(m)
    h = HistoryBest(recs, "llvm")
    assert apply_best(m, h) == (1, 0)
    text = print_module(m)
    assert f"factor = {v['T_relu.cols']}}}" in text and f"factor = {v['T_relu.rows']}}}" in text

    # tvm-run --tuning-log: no line about fallbacks when every kernel has a record
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    r = tool("run_main", src, "--input", f"x={tmp_path / 'x.npy'}", "--input", f"w={tmp_path / 'w.npy'}",
             "--tuning-log", log, "-o", tmp_path / "out.npy")
    assert r.returncode == 0, r.stderr
    assert "no record" not in r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), np.maximum(x @ w, 0), rtol=1e-4, atol=1e-4)

    # a model the log does not cover says so in one line
    other = tmp_path / "other.relay"
    other.write_text(DENSE.replace("32x", "16x"))
    r = tool("run_main", other, "--random-inputs", "--tuning-log", log)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("have no record") == 1 and "1 of 1 tunable kernel(s)" in r.stderr


def test_onnx_backend_takes_a_tuning_log(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    import tvmd.frontend.onnx_backend as backend
    w = np.random.default_rng(1).standard_normal((64, 48)).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Relu", ["y"], ["z"])],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 64])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [32, 48])],
                          [onnx.numpy_helper.from_array(w, "w")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    log = tmp_path / "tune.json"
    r = tool("tune_main", path, "--trials", 4, "--log", log, "--tuner", "grid", "--min-repeat-ms", 1)
    assert r.returncode == 0, r.stderr
    assert len(load(log)) >= 4
    x = np.random.default_rng(2).standard_normal((32, 64)).astype(np.float32)
    rep = backend.prepare(model, "CPU", compile_options={"tuning_log": str(log)})
    (z,) = rep.run([x])
    np.testing.assert_allclose(z, np.maximum(x @ w, 0), rtol=1e-4, atol=1e-4)


def test_the_scheduler_measures_defaults_first_and_keeps_to_the_time_budget():
    from tvmd.autotvm.measure import LocalMeasurer, MeasureOption
    from tvmd.autotvm.scheduler import tune_tasks
    tasks, weights, _ = extract_from_relay(parse_module(CNN))
    seen = []
    with LocalMeasurer(MeasureOption(min_repeat_ms=1)) as m:
        tuners = tune_tasks(tasks, weights, m, trials=200, tuner="random", history=seen, time_budget=0)
    assert [t.total_trials for t in tuners] == [1] * len(tasks)   # the defaults, then no time left
    assert sorted(r.index for r in seen) == sorted(t.space.default().index for t in tuners)
    # the shares are default cost x kernels: the doubled conv weighs twice its cost
    conv = next(t for t, w in zip(tuners, weights) if w == 2)
    assert conv.share == pytest.approx(2 * conv.default_cost)
