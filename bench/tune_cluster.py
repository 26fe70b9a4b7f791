"""Tuning throughput: configs measured per minute, local processes
(LocalMeasurer) against a Dask LocalCluster of two worker processes
(DaskMeasurer), on the same template, trial count, tuner and seed (a
benchmark: prints numbers, never passes or fails).

    python bench/tune_cluster.py [--template matmul_256] [--trials 40] [--tuner random]

Both sides measure with tvm-tune's defaults (number 1, repeat 3,
min_repeat_ms 20).  LocalMeasurer builds on as many processes as the
cores; the cluster is ``LocalCluster(n_workers=2, threads_per_worker=1,
resources={"device": 1})`` on this machine, so its runs are timed one at
a time by the host lock, as the local runner's are.  The cluster's start
is reported apart and left out of its rate; the measurement subprocesses
start lazily on both sides and are counted on both.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load_task(name):
    from tvmd.autotvm.task import extract_tasks
    from tvmd.parser import parse_module
    path = os.path.join(HERE, "templates", name + ".te")
    with open(path) as f:
        (task,), _ = extract_tasks(parse_module(f.read(), path))
    return task


def tune(task, measurer, kind, trials, seed):
    """(configs measured, failures, wall seconds, best GFLOP/s)."""
    from tvmd.autotvm.tuner import make_tuner
    t0 = time.perf_counter()
    tuner = make_tuner(kind, task, seed=seed).tune(trials, measurer=measurer)
    wall = time.perf_counter() - t0
    return tuner.trials, tuner.failed, wall, tuner.best_flops / 1e9


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--template", default="matmul_256")
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--tuner", default="random")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)

    from distributed import LocalCluster

    from tvmd.autotvm.measure import LocalMeasurer, MeasureOption, cpu_count
    from tvmd.autotvm.measure_dask import DaskMeasurer

    option = MeasureOption(number=1, repeat=3, min_repeat_ms=20.0)
    rows = []

    task = load_task(a.template)
    with LocalMeasurer(option) as m:
        rows.append((f"local ({m.n_parallel} build processes, 1 runner)", *tune(task, m, a.tuner, a.trials, a.seed)))

    t0 = time.perf_counter()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      resources={"device": 1}, dashboard_address=None) as cluster:
        start = time.perf_counter() - t0
        task = load_task(a.template)   # a fresh task: nothing measured carries over
        with DaskMeasurer(cluster.scheduler_address, option) as m:
            rows.append((f"dask LocalCluster (2 workers x 1 thread, started in {start:.1f} s)",
                         *tune(task, m, a.tuner, a.trials, a.seed)))

    print(f"{a.template}, {a.tuner} tuner, {a.trials} trials, {cpu_count()} cores")
    print(f"{'measurer':64s} {'configs':>7s} {'failed':>6s} {'wall s':>7s} {'configs/min':>11s} "
          f"{'best GFLOP/s':>12s}")
    for name, n, failed, wall, gflops in rows:
        print(f"{name:64s} {n:7d} {failed:6d} {wall:7.1f} {n / wall * 60:11.1f} {gflops:12.1f}")
    (_, n0, _, w0, _), (_, n1, _, w1, _) = rows
    print(f"dask / local throughput: {(n1 / w1) / (n0 / w0):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
