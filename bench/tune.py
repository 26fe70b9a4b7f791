"""AutoTVM benchmarks: tuned vs default vs the anchors, in one run.

    .venv/bin/python bench/tune.py [--only matmul,ops,models] [--trials N]
                                   [--time-budget S] [--quick] [--log-dir D]

* matmul 1024^3 f32, two templates tuned with XGBoost: relay ``nn.matmul``
  whose default schedule is the template (its tile sizes are knobs), and a
  classic AutoTVM Python template that packs both operands in panels whose
  widths are knobs (``matmul_packed``: the structure of the hand schedule
  bench/schedules/matmul.te, none of its numbers); against numpy
  (OpenBLAS) timed in the same process, and the hand schedule.
* ops: conv2d at ResNet-50 shapes and dense at BERT shapes, each a
  one-op model with a constant weight (as in a model: the graph passes
  pack it at compile time) tuned alone: default vs tuned vs numpy (conv:
  im2col + BLAS).
* models: ResNet-50 (tvmd/testing/onnx_zoo.py; --quick: one block per
  stage at 112x112) and the BERT layer of bench/models.py, tuned within
  --time-budget seconds each (default 1200: 20 minutes), then
  built with the log; latency against onnxruntime at equal threads, before
  and after.

XGBoost against random search is bench/tune_search.py; local processes
against a Dask cluster is bench/tune_cluster.py.

Kernel figures are GFLOP/s from the tuning records (the kernel alone,
timed in the isolated runner); model and op latencies go through the
public API (``build(..., tuning_log=...).run``), medians over runs timed
in alternating blocks (each engine in turn, several rounds), with the
interquartile spread.  The
machine's limit is read off the machine (bench/machine.py) and printed
first; a figure above it is a bug in the measurement.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))
import machine  # noqa: E402

LIMIT_GFLOPS = machine.peak_gflops(2)


def interleaved(fns, repeat=40, rounds=8):
    """[(median s, spread %)] of each of fns, timed in alternating blocks
    (bench/models.py's interleaved_times), so that the shared machine's
    drifts in load fall on every engine alike."""
    import models as M
    return [(float(np.median(ts)), M.spread_pct(ts)) for ts in M.interleaved_times(fns, repeat, rounds)]


def tune_module(text, log, trials, time_budget=None, tuner="xgb"):
    """Tune a relay module's tasks into `log`; (tasks, weights, tuners)."""
    from tvmd.autotvm.callback import log_to_file
    from tvmd.autotvm.extract import extract_from_relay
    from tvmd.autotvm.measure import LocalMeasurer, MeasureOption
    from tvmd.autotvm.record import LogWriter
    from tvmd.autotvm.scheduler import tune_tasks
    from tvmd.parser import parse_module
    module = parse_module(text) if isinstance(text, str) else text
    tasks, weights, skipped = extract_from_relay(module)
    if os.path.exists(log):
        os.remove(log)
    with LogWriter(log) as w, LocalMeasurer(MeasureOption(min_repeat_ms=20, repeat=3)) as m:
        tuners = tune_tasks(tasks, weights, m, trials, tuner, callbacks=[log_to_file(w)], time_budget=time_budget)
    return tasks, weights, tuners


def gflops(flop, seconds):
    return flop / seconds / 1e9 if seconds and seconds < 1e8 else 0.0


# -- matmul -------------------------------------------------------------------------

MATMUL = """relay.func @main(%x: tensor<{n}x{n}xf32>, %w: tensor<{n}x{n}xf32>) -> tensor<{n}x{n}xf32> {{
  %0 = nn.matmul(%x, %w) : tensor<{n}x{n}xf32>
  return %0
}}
"""


def matmul_packed_template():
    """A classic AutoTVM template: A and B packed in panels of mb rows and
    nb columns (zero-padded to whole panels), the output tiled mb x nb and
    accumulated in a local tile with k outside (split by kunroll,
    unrolled), row tiles grouped mc at a time (a block of A stays in cache
    while the column panels pass), the parallel loop over row blocks or
    column panels.  Every number is a knob; none is this machine's."""
    from tvmd import autotvm, te

    @autotvm.template("bench/matmul_packed")
    def matmul_packed(n):
        cfg = autotvm.get_config()
        cfg.define_knob("mb", [2, 4, 6, 8, 10, 12, 14, 16])
        cfg.define_knob("nb", [8, 16, 32])
        cfg.define_knob("mc", [1, 4, 16, 64])
        cfg.define_knob("par", [0, 1])          # 0: row blocks parallel, 1: column panels
        cfg.define_knob("kunroll", [1, 2, 4])
        mb, nb, mc = cfg["mb"].val, cfg["nb"].val, cfg["mc"].val
        mo, no = -(-n // mb), -(-n // nb)
        A = te.placeholder((n, n), name="A")
        B = te.placeholder((n, n), name="B")
        Bp = te.compute((no, n, nb), lambda jo, k, ji: te.if_then_else(jo * nb + ji < n, B[k, jo * nb + ji], 0.0),
                        name="Bp")
        Ap = te.compute((mo, n, mb), lambda io, k, ii: te.if_then_else(io * mb + ii < n, A[io * mb + ii, k], 0.0),
                        name="Ap")
        k = te.reduce_axis((0, n), name="k")
        C = te.compute((n, n), lambda i, j: te.sum(Ap[i // mb, k, i % mb] * Bp[j // nb, k, j % nb], axis=k),
                       name="C")
        s = te.create_schedule(C.op)
        CL = s.cache_write(C, "local")
        s[Bp].parallel(s[Bp].op.axis[0])
        s[Bp].vectorize(s[Bp].op.axis[2])
        s[Ap].parallel(s[Ap].op.axis[0])
        i, j = s[C].op.axis
        io, ii = s[C].split(i, factor=mb)
        ioo, ioi = s[C].split(io, factor=mc)
        jo, ji = s[C].split(j, factor=nb)
        s[C].reorder(ioo, jo, ioi, ii, ji)
        s[C].parallel(jo if cfg["par"].val else ioo)
        s[C].unroll(ii)
        s[C].vectorize(ji)
        s[CL].compute_at(s[C], ioi)
        ci, cj = s[CL].op.axis
        ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factor=cfg["kunroll"].val)
        s[CL].reorder(ko, ki, ci, cj)
        s[CL].unroll(ki)
        s[CL].unroll(ci)
        s[CL].vectorize(cj)
        cfg.add_flop(2 * n ** 3)
        return s, [A, B, C]
    return matmul_packed


def tune_python_template(template, args, log, trials):
    from tvmd import autotvm
    from tvmd.autotvm.callback import log_to_file
    from tvmd.autotvm.measure import LocalMeasurer, MeasureOption
    task = autotvm.task.create(template, args=args, target="llvm")
    if os.path.exists(log):
        os.remove(log)
    tuner = autotvm.tuner.XGBTuner(task, plan_size=16)
    with LocalMeasurer(MeasureOption(min_repeat_ms=20, repeat=3)) as m:
        tuner.tune(min(trials, len(task.config_space)), measurer=m, callbacks=[log_to_file(log)])
    return task, tuner


def bench_matmul(args):
    import tvmd as tvm
    from tvmd import autotvm
    from tvmd.runtime.build import build
    n = 512 if args.quick else 1024
    flop = 2 * n ** 3
    log = os.path.join(args.log_dir, f"matmul{n}.json")
    text = MATMUL.format(n=n)
    t0 = time.perf_counter()
    tasks, _, tuners = tune_module(text, log, args.trials)
    tune_s = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    default = build(text, progress=False)
    tuned = build(text, progress=False, tuning_log=log)
    np.testing.assert_allclose(tuned.run(a, b), a @ b, rtol=1e-3, atol=1e-2)
    template = matmul_packed_template()
    plog = os.path.join(args.log_dir, f"matmul_packed{n}.json")
    t0 = time.perf_counter()
    ptask, ptuner = tune_python_template(template, (n,), plog, args.trials)
    ptune_s = time.perf_counter() - t0
    with autotvm.apply_history_best(plog), tvm.target.Target("llvm"):
        s, bufs = template(n)
        packed = tvm.build(s, bufs)
    c = np.empty((n, n), np.float32)
    packed(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-2)
    names = ["numpy (OpenBLAS)", "relay default", "relay tuned", "packed tuned"]
    fns = [lambda: a @ b, lambda: default.run(a, b), lambda: tuned.run(a, b), lambda: packed(a, b, c)]
    if n == 1024:
        names.append("hand schedule")
        fns.append(_hand_schedule(a, b))
    rows = list(zip(names, interleaved(fns)))
    base = rows[0][1][0]
    t = tuners[0]
    print(f"\nmatmul {n}^3 f32, tuned {t.total_trials} trials in {tune_s:.0f} s "
          f"(kernel: default {gflops(flop, t.default_cost):.1f}, best {gflops(flop, t.best_cost):.1f} GFLOP/s)")
    print(f"python template matmul_packed: {ptuner.trials} trials of {len(ptask.config_space)} in {ptune_s:.0f} s, "
          f"best {ptask.config_space.get(ptuner.best_index).values if ptuner.best_index is not None else None} "
          f"(kernel {gflops(flop, ptuner.best_cost):.1f} GFLOP/s)")
    print(f"{'':<18} {'median ms':>10} {'spread':>7} {'GFLOP/s':>9} {'vs numpy':>9}   (limit {LIMIT_GFLOPS:.0f})")
    for name, (med, spread) in rows:
        print(f"{name:<18} {med * 1e3:>10.2f} {spread:>6.0f}% {gflops(flop, med):>9.1f} {base / med:>8.2f}x")


def _hand_schedule(a, b):
    from tvmd.backend.llvm import jit
    from tvmd.ir.pass_manager import PassManager, instantiate, parse_pipeline
    from tvmd.ir.registry import get_pass_class
    from tvmd.parser import parse_module
    from tvmd.runtime.executor import allocate_outputs
    path = os.path.join(os.path.dirname(__file__), "schedules", "matmul.te")
    m = parse_module(open(path).read(), path)
    PassManager(instantiate(parse_pipeline("apply-schedule,lower-te-to-tir,lower-tir"), get_pass_class)).run(m)
    f = next(op for op in m.body.ops if op.name == "tir.func")
    k = jit.compile(m)[f.sym_name]
    outs = allocate_outputs(f)
    return lambda: k(a, b, *outs)


# -- single ops -----------------------------------------------------------------------

def conv_text(h, c, o, k, stride=1):
    p = k // 2
    oh = (h + 2 * p - k) // stride + 1
    return (f"relay.func @main(%x: tensor<1x{c}x{h}x{h}xf32>) -> tensor<1x{o}x{oh}x{oh}xf32> {{\n"
            f"  %w = constant dense<0.0> : tensor<{o}x{c}x{k}x{k}xf32>\n"
            f"  %0 = nn.conv2d(%x, %w) {{strides = [{stride}, {stride}], padding = [{p}, {p}, {p}, {p}]}} "
            f": tensor<1x{o}x{oh}x{oh}xf32>\n  return %0\n}}\n"), 2 * o * oh * oh * c * k * k


def dense_text(m, k, n):
    return (f"relay.func @main(%x: tensor<{m}x{k}xf32>) -> tensor<{m}x{n}xf32> {{\n"
            f"  %w = constant dense<0.0> : tensor<{n}x{k}xf32>\n"
            f"  %0 = nn.dense(%x, %w) : tensor<{m}x{n}xf32>\n  return %0\n}}\n"), 2 * m * k * n


def with_weight(text, w):
    """The module of `text` with its one constant (the weight) set to `w`:
    a model's weights are constants, which the graph passes pack at
    compile time (printing megabytes of them into the text would be slow)."""
    from tvmd.ir.attributes import DenseAttr
    from tvmd.parser import parse_module
    m = parse_module(text)
    c = next(op for op in m.lookup("main").body.ops if op.name == "relay.constant")
    c.attributes["value"] = DenseAttr(w, c.results[0].type)
    return m


def conv_numpy(x, w, stride):
    """im2col + BLAS, the usual numpy conv."""
    o, c, k, _ = w.shape
    p = k // 2
    xp = np.pad(x[0], ((0, 0), (p, p), (p, p)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(1, 2))[:, ::stride, ::stride]
    cols = np.ascontiguousarray(win.transpose(1, 2, 0, 3, 4)).reshape(win.shape[1] * win.shape[2], -1)
    return (w.reshape(o, -1) @ cols.T).reshape(1, o, win.shape[1], win.shape[2])


OPS = [("conv 56x56 64->64 3x3", lambda: conv_text(56, 64, 64, 3), "conv", 1),
       ("conv 28x28 128->128 3x3", lambda: conv_text(28, 128, 128, 3), "conv", 1),
       ("conv 14x14 256->256 3x3", lambda: conv_text(14, 256, 256, 3), "conv", 1),
       ("conv 56x56 64->256 1x1", lambda: conv_text(56, 64, 256, 1), "conv", 1),
       ("dense 128x768x768", lambda: dense_text(128, 768, 768), "dense", None),
       ("dense 128x768x3072", lambda: dense_text(128, 768, 3072), "dense", None)]


def bench_ops(args):
    from tvmd.runtime.build import build
    rng = np.random.default_rng(1)
    ops = OPS[:1] + OPS[4:5] if args.quick else OPS
    print(f"\nsingle ops, tuned {args.op_trials} trials each (GFLOP/s through build(...).run; "
          f"limit {LIMIT_GFLOPS:.0f})")
    print(f"{'op':<26} {'numpy':>8} {'default':>8} {'tuned':>8} {'tuned/def':>9} {'tuned/np':>9} {'kernel best':>11}")
    for name, make, kind, stride in ops:
        text, flop = make()
        from tvmd.parser import parse_module
        main_fn = parse_module(text).lookup("main")
        x = rng.standard_normal(main_fn.body.args[0].type.shape).astype(np.float32)
        wt = next(op for op in main_fn.body.ops if op.name == "relay.constant").results[0].type
        w = (rng.standard_normal(wt.shape) * 0.1).astype(np.float32)
        ref = (lambda: conv_numpy(x, w, stride)) if kind == "conv" else (lambda: x @ w.T)
        log = os.path.join(args.log_dir, name.replace(" ", "_").replace(">", "") + ".json")
        tasks, weights, tuners = tune_module(with_weight(text, w), log, args.op_trials)
        default = build(with_weight(text, w), progress=False)
        tuned = build(with_weight(text, w), progress=False, tuning_log=log)
        np.testing.assert_allclose(tuned.run(x), ref(), rtol=1e-3, atol=1e-2)
        t_np, t_d, t_t = (t for t, _ in interleaved([ref, lambda: default.run(x), lambda: tuned.run(x)]))
        main = max(range(len(tasks)), key=lambda i: tuners[i].share)
        print(f"{name:<26} {gflops(flop, t_np):>8.1f} {gflops(flop, t_d):>8.1f} {gflops(flop, t_t):>8.1f} "
              f"{t_d / t_t:>8.2f}x {t_np / t_t:>8.2f}x {gflops(tasks[main].flop, tuners[main].best_cost):>11.1f}")


# -- whole models -----------------------------------------------------------------------

def bench_models(args):
    import models as M
    from tvmd.frontend.onnx import from_onnx
    from tvmd.runtime.build import build
    rng = np.random.default_rng(2)
    from tvmd.testing.onnx_zoo import resnet50
    specs = [("resnet50", resnet50(112 if args.quick else 224, layers=(1, 1, 1, 1) if args.quick else (3, 4, 6, 3))[0]),
             ("bert-layer", M.bert_layer_onnx(seq=32 if args.quick else 128))]
    print(f"\nwhole models, tuned within {args.time_budget:.0f} s each; latency at 2 threads vs onnxruntime")
    print(f"{'model':<12} {'tasks':>5} {'trials':>6} {'tune s':>7} {'ort ms':>8} {'default ms':>10} "
          f"{'tuned ms':>9} {'def/ort':>8} {'tuned/ort':>9}")
    for name, model in specs:
        module, _ = from_onnx(model)
        log = os.path.join(args.log_dir, f"{name}.json")
        t0 = time.perf_counter()
        tasks, _, tuners = tune_module(module.clone(), log, 100000, time_budget=args.time_budget)
        tune_s = time.perf_counter() - t0
        sess = M.ort_session(model, 2)
        feeds = {}
        for vi in model.graph.input:
            shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
            dt = {1: np.float32, 7: np.int64, 6: np.int32}[vi.type.tensor_type.elem_type]
            feeds[vi.name] = (rng.standard_normal(shape) if dt == np.float32 else rng.integers(0, 2, shape)) \
                .astype(dt)
        default = build(module.clone(), progress=False)
        tuned = build(module.clone(), progress=False, tuning_log=log)
        arrays = [feeds[n] for n in default.input_names]
        want = sess.run(None, feeds)[0]
        got = tuned.run(*arrays)
        got = got[0] if isinstance(got, tuple) else got
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
        (t_d, _), (t_t, _), (t_o, _) = interleaved([lambda: default.run(*arrays), lambda: tuned.run(*arrays),
                                                    lambda: sess.run(None, feeds)])
        t_d, t_t, t_o = t_d * 1e3, t_t * 1e3, t_o * 1e3
        trials = sum(t.total_trials for t in tuners)
        print(f"{name:<12} {len(tasks):>5} {trials:>6} {tune_s:>7.0f} {t_o:>8.2f} {t_d:>10.2f} {t_t:>9.2f} "
              f"{t_d / t_o:>8.2f} {t_t / t_o:>9.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="matmul,ops,models")
    ap.add_argument("--trials", type=int, default=200, help="matmul's trials")
    ap.add_argument("--op-trials", type=int, default=60, help="trials per single op")
    ap.add_argument("--time-budget", type=float, default=1200.0, help="seconds of tuning per whole model")
    ap.add_argument("--quick", action="store_true", help="smaller sizes and budgets: a few minutes")
    ap.add_argument("--log-dir", default="/tmp/tvmd-bench-tune")
    args = ap.parse_args(argv)
    if args.quick:
        args.trials, args.op_trials, args.time_budget = min(args.trials, 24), min(args.op_trials, 12), \
            min(args.time_budget, 60.0)
    os.makedirs(args.log_dir, exist_ok=True)
    os.environ.setdefault("TVMD_NUM_THREADS", "2")
    only = set(args.only.split(","))
    print(machine.describe(2))
    if "matmul" in only:
        bench_matmul(args)
    if "ops" in only:
        bench_ops(args)
    if "models" in only:
        bench_models(args)


if __name__ == "__main__":
    main()
