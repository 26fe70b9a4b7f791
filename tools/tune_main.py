"""tvm-tune: AutoTVM over te templates.

    tvm-tune kernel.te|model.relay|model.onnx --trials N --log tune.json
             [--tuner xgb|ga|random|grid] [--early-stopping K] [--confirm K] [--time-budget S] [--resume]
             [--target T] [--seed S] [--number N] [--repeat R] [--min-repeat-ms MS] [--timeout S]
             [--build-timeout S] [--parallel N] [--flush-cache] [--no-check]
             [--cluster tcp://host:8786]
    tvm-tune --space template.te
    tvm-tune --pick-best in.json -o best.json

Tuning: each te.func with knobs is a template (a model's kernels' default
schedules are: autotvm/extract.py); templates of one workload (task name
and argument types) are one task.  The N trials are spread over the tasks
by their share of the time (autotvm/scheduler.py; each task's default
config is measured first), and so is ``--time-budget``; once a task's
trials are done its ``--confirm`` fastest configs are measured again and
its best is the one with the lowest mean.  Each config is
built in a worker process and timed in an isolated one
(autotvm/measure.py).  Every record is appended to the log and flushed at
once; ``--resume`` continues a log (its configs are not measured again and
count toward N), and without it an existing non-empty log is refused
rather than mixed into.  On a terminal a progress line per task; at the
end a table: task, kernels, trials, failed configs, default and best
GFLOPS, speed-up; for a model, its latency untuned and tuned.

``--space`` prints each template's space; ``--pick-best`` keeps the best
record per workload and target.
"""

from __future__ import annotations

import math
import os
import sys

from ..autotvm.scheduler import CONFIRM_TOP
from .cmdline import ToolDriver, report_internal_error, take_input, take_value, tool_main

USAGE = ("usage: tvm-tune template.te|model.relay|model.onnx --trials N --log tune.json "
         "[--tuner xgb|ga|random|grid] [--early-stopping K] [--time-budget S] [--resume] [--target T] ...\n"
         "       tvm-tune --space template.te\n"
         "       tvm-tune --pick-best in.json -o best.json")
HELP = """Tunes AutoTVM templates: te functions whose schedule ops take knobs,
#tune.knob<"NAME", [CANDIDATES], DEFAULT>, in place of numbers.

  --trials N           configs to measure, spread over the tasks by their share of the time
  --log FILE           the tuning log (AutoTVM v0.2 JSON lines), appended per record
  --tuner KIND         xgb (default), ga, random or grid
  --early-stopping K   stop a task after K trials without a better config
  --confirm K          measure each task's K fastest configs once more after its trials, and
                       take the best by the mean of its measurements (default 3; 0: off)
  --time-budget S      stop after S seconds, spread over the tasks by their share of the time
  --resume             continue an existing log: its configs count and are not re-measured
  --target T           the target to tune for (default llvm: this CPU)
  --seed S             the tuners' random seed (default 0)
  --number N, --repeat R, --min-repeat-ms MS
                       timing: R rounds (default 3) of N calls (N grows until a round
                       lasts MS, default 20)
  --timeout S          seconds a run may take (default 10); --build-timeout S (default 60)
  --parallel N         build workers (default: the cores)
  --cluster ADDRESS    build and run on a Dask cluster (tcp://host:8786); the tuner stays here
  --plot FILE.png      plot best-so-far GFLOPS against trials per task (needs matplotlib)
  --flush-cache        flush the caches before each timed round
  --no-check           do not compare outputs with the default config's
  --space FILE         print each template's knobs (candidates, length, default) and
                       the size of its space
  --pick-best IN -o OUT   keep the best record per workload and target
  --help, --version"""

TUNERS = ("xgb", "ga", "random", "grid")
INT_FLAGS = {"--trials": 1, "--early-stopping": 1, "--confirm": 0, "--seed": 0, "--number": 1, "--repeat": 1, "--parallel": 1}
FLOAT_FLAGS = {"--min-repeat-ms": 0.0, "--timeout": 1e-3, "--build-timeout": 1e-3, "--time-budget": 0.0}
VALUE_FLAGS = set(INT_FLAGS) | set(FLOAT_FLAGS) | {"--log", "--tuner", "--target", "--pick-best", "-o",
                                                    "--output", "--cluster", "--plot"}


class Options:
    def __init__(self):
        self.space = self.resume = self.flush_cache = False
        self.check = True
        self.input = self.input_index = None
        self.trials = None
        self.log = self.log_index = None
        self.tuner = "xgb"
        self.early_stopping = None
        self.confirm = CONFIRM_TOP
        self.target = "llvm"
        self.target_index = None
        self.seed = 0
        self.number, self.repeat, self.min_repeat_ms = 1, 3, 20.0
        self.timeout, self.build_timeout, self.parallel = 10.0, 60.0, 0
        self.pick_best = self.output = None
        self.pick_index = self.output_index = None
        self.cluster = self.cluster_index = None
        self.time_budget = None
        self.plot = self.plot_index = None


def parse_args(argv, cl) -> Options:
    o = Options()
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-" or not a.startswith("-"):
            take_input(o, a, i, cl, "template")
            i += 1
            continue
        name, eq, value = a.partition("=") if a.startswith("--") else (a, "", "")
        flags = {"--space": "space", "--resume": "resume", "--flush-cache": "flush_cache"}
        if name in flags:
            setattr(o, flags[name], True)
            i += 1
            continue
        if name == "--no-check":
            o.check = False
            i += 1
            continue
        if name not in VALUE_FLAGS:
            raise cl.error(i, f"unknown option '{name}'")
        value, vi, voff, i = take_value(argv, i, name, eq, value, cl)
        key = name.lstrip("-").replace("-", "_")
        if name in INT_FLAGS:
            try:
                v = int(value)
            except ValueError:
                v = None
            if v is None or v < INT_FLAGS[name] or v > 1 << 40:
                raise cl.error(vi, f"{name} takes an integer >= {INT_FLAGS[name]}, got '{value}'", voff)
            setattr(o, key, v)
        elif name in FLOAT_FLAGS:
            try:
                v = float(value)
            except ValueError:
                v = math.nan
            if not math.isfinite(v) or v < FLOAT_FLAGS[name]:
                raise cl.error(vi, f"{name} takes a finite number >= {FLOAT_FLAGS[name]:g}, got '{value}'", voff)
            setattr(o, key, v)
        elif name == "--tuner":
            if value not in TUNERS:
                raise cl.error(vi, f"unknown tuner '{value}' (tuners: {', '.join(TUNERS)})", voff)
            o.tuner = value
        elif name == "--target":
            o.target, o.target_index = value, vi
        elif name == "--log":
            o.log, o.log_index = value, vi
        elif name == "--plot":
            o.plot, o.plot_index = value, vi
        elif name == "--cluster":
            o.cluster, o.cluster_index = value, vi
        elif name == "--pick-best":
            o.pick_best, o.pick_index = value, vi
        else:   # -o / --output
            o.output, o.output_index = value, vi
    if o.pick_best is not None:
        if o.output is None:
            raise cl.error(o.pick_index, "--pick-best needs -o OUT for the best records")
        return o
    if o.input is None:
        raise cl.error(-1, "no template given")
    if o.space:
        return o
    if o.trials is None or o.log is None:
        raise cl.error(-1, "give --trials N and --log FILE to tune (or --space to print the space)")
    return o


class Driver(ToolDriver):
    PROG = "tvm-tune"

    def run(self) -> int:
        argv = self.argv
        if any(a in ("--help", "-h") for a in argv):
            sys.stdout.write(USAGE + "\n\n" + HELP + "\n")
            return 0
        if "--version" in argv:
            from .. import __version__
            sys.stdout.write(f"tvm-tune (tvmd) {__version__}\n")
            return 0
        from ..ir.diagnostics import DiagnosticError
        try:
            o = parse_args(argv, self.cl)
            if o.pick_best is not None:
                return self.pick_best(o)
            found = self.templates(o)
            if o.space:
                spaces = [sp for _, sp in found] if not self.is_model else \
                    [t.config_space for t in self.tasks(o)[0]]
                sys.stdout.write("\n".join(sp.describe() for sp in spaces) + "\n")
                return 0
            return self.tune(o)
        except DiagnosticError as e:
            self.report(e)
            return 1
        except KeyboardInterrupt:
            log = getattr(self, "log_path", None)
            sys.stderr.write("tvm-tune: interrupted" + (f"; the records measured so far are in {log}: "
                                                        f"--resume continues" if log else "") + "\n")
            return 130
        except Exception as e:   # a bug: one line saying where, not a traceback
            report_internal_error(e)
            return 1

    def templates(self, o):
        """The templates of a .te input (for --space, and to tune)."""
        from ..autotvm.space import templates
        from ..parser import parse_module
        if o.input.endswith(".onnx"):
            self.module, self.is_model = self.read_model(o), True
            return []
        fname, text = self.read_input(o.input, o.input_index)
        self.module = parse_module(text, fname)
        self.is_model = any(op.name == "relay.func" for op in self.module.body.ops)
        if self.is_model:
            return []
        found = templates(self.module)
        if not found:
            raise self.cl.error(o.input_index, f"'{o.input}' has no te.func with knobs "
                                               f"(#tune.knob<\"NAME\", [CANDIDATES]>)")
        return found

    def read_model(self, o):
        from .cmdline import import_onnx
        return import_onnx(self.cl, o.input, o.input_index)

    def tasks(self, o):
        """(tasks, weights): a model's kernels' templates (weight: how many
        kernels each task stands for), or a .te file's templates."""
        if not self.is_model:
            from ..autotvm.task import extract_tasks
            tasks, _ = extract_tasks(self.module, o.target)
            return tasks, [1] * len(tasks)
        from ..autotvm.extract import extract_from_relay
        self.original = self.module.clone()
        tasks, weights, skipped = extract_from_relay(self.module, o.target)
        for name, why in skipped:
            sys.stderr.write(f"tvm-tune: @{name} is not tunable (it will run in the interpreter): {why}\n")
        if not tasks:
            raise self.cl.error(o.input_index, f"'{o.input}' has no kernel to tune")
        return tasks, weights

    def pick_best(self, o) -> int:
        from ..autotvm.record import load, pick_best
        from ..ir.files import write_atomic
        self.check_distinct(o.output, o.output_index, o.pick_best)
        records = load(o.pick_best)
        best = pick_best(records)
        write_atomic(o.output, "".join(r.to_json() + "\n" for r in best))
        sys.stderr.write(f"tvm-tune: kept {len(best)} of {len(records)} records (the best per workload "
                         f"and target) in {o.output}\n")
        return 0

    def check_distinct(self, out, index, *inputs):
        for p in inputs:
            if p is not None and p != "-" and os.path.exists(out) and os.path.exists(p) \
                    and os.path.samefile(out, p):
                raise self.cl.error(index, f"'{out}' is also an input: refusing to overwrite it")

    def tune(self, o) -> int:
        from ..autotvm.measure import MeasureOption
        from ..autotvm.record import LogWriter, load
        from ..backend.spec import TargetError, parse_target
        try:
            parse_target(o.target)
        except TargetError as e:
            raise self.cl.error(o.target_index, str(e), e.offset) from None
        self.check_distinct(o.log, o.log_index, o.input)
        if o.plot:
            self.check_distinct(o.plot, o.plot_index, o.input, o.log)
            try:
                import matplotlib  # noqa: F401 - checked before hours of tuning, not after
            except ImportError:
                raise self.cl.error(o.plot_index, "--plot needs matplotlib: pip install 'tvmd[plot]'") from None
        previous = []
        if os.path.exists(o.log) and os.path.getsize(o.log) > 0:
            if not o.resume:
                raise self.cl.error(o.log_index, f"'{o.log}' already holds records: give --resume to "
                                                 f"continue it, or name another log")
            previous = load(o.log)
        tasks, weights = self.tasks(o)
        option = MeasureOption(number=o.number, repeat=o.repeat, min_repeat_ms=o.min_repeat_ms,
                               timeout=o.timeout, build_timeout=o.build_timeout, n_parallel=o.parallel,
                               flush_cache=o.flush_cache, check_correctness=o.check, seed=o.seed)
        measurer = self.measurer(o, option)
        try:
            writer = LogWriter(o.log)
            self.log_path = o.log
        except OSError as e:
            measurer.close()
            raise self.cl.error(o.log_index, f"cannot write the log '{o.log}': {e.strerror}") from None
        seen = list(previous)
        with writer, measurer:
            tuners = self.schedule(o, tasks, weights, measurer, seen, writer)
        sys.stdout.write(summary_table(tasks, weights, tuners, o.log))
        if o.plot:
            plot_curves(tasks, tuners, o.plot)
            sys.stderr.write(f"tvm-tune: plotted the tuning curves in {o.plot}\n")
        if self.is_model:
            sys.stdout.write(self.model_latency(o))
        return 0

    def schedule(self, o, tasks, weights, measurer, seen, writer):
        """Tune the tasks (autotvm/scheduler.py), a progress line each."""
        from ..autotvm.callback import log_to_file, progress_bar
        from ..autotvm.scheduler import tune_tasks

        def bar(n, count, budget, done):
            return progress_bar(budget, f"[Task {n:2d}/{count:2d}] ", done=done)
        return tune_tasks(tasks, weights, measurer, o.trials, o.tuner, history=seen,
                          callbacks=[log_to_file(writer)], early_stopping=o.early_stopping,
                          time_budget=o.time_budget, seed=o.seed, progress=bar, confirm=o.confirm)

    def model_latency(self, o) -> str:
        """The model's latency untuned and with the log, built as tvm-run
        builds it and timed in this process (median of the runs)."""
        from ..runtime.build import build
        before = _time_model(build(self.original.clone(), o.target, progress=False), o.seed)
        after = _time_model(build(self.original.clone(), o.target, progress=False, tuning_log=o.log), o.seed)
        return (f"model latency: {before * 1e3:.3f} ms untuned, {after * 1e3:.3f} ms tuned "
                f"({before / after:.2f}x)\n")

    def measurer(self, o, option):
        if o.cluster is None:
            from ..autotvm.measure import LocalMeasurer
            return LocalMeasurer(option)
        from ..autotvm.measure_dask import DaskMeasurer
        try:
            return DaskMeasurer(o.cluster, option)
        except ConnectionError as e:
            raise self.cl.error(o.cluster_index, str(e)) from None


def _time_model(cm, seed, min_seconds: float = 0.5) -> float:
    import time

    import numpy as np

    from ..runtime.ndarray import random_array
    rng = np.random.default_rng(seed)
    inputs = [random_array(t.shape, t.dtype, rng) for t in cm.input_types]
    cm.run(*inputs)
    times, t_end = [], time.perf_counter() + min_seconds
    while len(times) < 5 or time.perf_counter() < t_end:
        t0 = time.perf_counter()
        cm.run(*inputs)
        times.append(time.perf_counter() - t0)
        if len(times) >= 1000:
            break
    return float(np.median(times))


def plot_curves(tasks, tuners, path):
    """Best-so-far GFLOPS against trials, one curve per task: what people
    look at to decide whether more trials would help."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..ir.files import write_atomic_bytes
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (task, t) in enumerate(zip(tasks, tuners), 1):
        if t.history:
            xs, ys = zip(*t.history)
            ax.step(xs, [y / 1e9 for y in ys], where="post", marker=".", ms=4, label=f"{i}: {task.name}"[:40])
    ax.set_xlabel("trials")
    ax.set_ylabel("best GFLOPS so far")
    ax.grid(alpha=0.3)
    if len(tasks) <= 12:
        ax.legend(fontsize=7)
    import io
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    write_atomic_bytes(path, buf.getvalue())


def summary_table(tasks, weights, tuners, log) -> str:
    head = (f"{'task':<34} {'kernels':>7} {'trials':>6} {'failed':>6} {'default':>9} {'best':>9} "
            f"{'speed-up':>8}  (GFLOPS)")
    lines = [head]
    for task, w, tuner in zip(tasks, weights, tuners):
        d = task.flop / tuner.default_cost / 1e9 if tuner.default_cost else 0.0
        b = tuner.best_flops / 1e9
        up = f"{b / d:7.2f}x" if d else "      -"
        trials = getattr(tuner, "total_trials", tuner.trials)
        lines.append(f"{task.name[:34]:<34} {w:>7} {trials:>6} {tuner.failed:>6} {d:9.2f} {b:9.2f} {up:>8}")
    lines.append(f"records in {log}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    return tool_main(Driver, argv)


if __name__ == "__main__":
    sys.exit(main())
