"""Measuring configs: build in parallel workers, run in an isolated one.

For a batch of configs of one task::

    build   in a pool of worker processes (``n_parallel``), one config each:
            instantiate the template, --apply-schedule, lower to tir, LLVM
            object code.  A config that makes no valid schedule is
            INSTANTIATION_ERROR; one whose lowering or codegen fails
            COMPILE_HOST; one that takes longer than ``build_timeout``
            BUILD_TIMEOUT (the worker is killed and replaced).
    run     one config at a time in a runner process: load the object, fill
            the inputs from a fixed seed, run once and keep the output,
            then time ``repeat`` rounds of ``number`` calls (``number``
            grows until a round lasts ``min_repeat_ms``), optionally
            flushing the caches before each round.  A crash (segfault,
            abort) or an exception is RUNTIME_DEVICE, a run past
            ``timeout`` RUN_TIMEOUT; the runner is killed and replaced and
            the next config goes on.
    check   the output against the default config's (the first that ran,
            if the default failed): a difference is WRONG_ANSWER.

Every config measured yields one :class:`~.record.Record`; nothing a
candidate does reaches the tuner as an exception.  The workers are
processes of the ``spawn`` kind with nothing of the parent but this module,
so a kernel's threads or a corrupted heap die with them.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .record import FAILED_COST, ErrorNo, Record, entity_json


@dataclass
class MeasureOption:
    number: int = 1            # calls per timed round (grown to reach min_repeat_ms)
    repeat: int = 3            # timed rounds; a record's costs are one per round
    min_repeat_ms: float = 0.0
    timeout: float = 10.0      # seconds a run may take (all rounds)
    build_timeout: float = 60.0
    n_parallel: int = 0        # build workers; 0: the machine's cores
    flush_cache: bool = False  # write a buffer larger than the caches before each round
    check_correctness: bool = True
    seed: int = 0              # of the inputs


@dataclass
class BuildResult:
    index: int
    error_no: int = ErrorNo.NO_ERROR
    error_msg: str | None = None
    obj: bytes | None = None
    func: str | None = None
    params: list | None = None   # [(shape, dtype, is_output)] of the buffers, in order
    time: float = 0.0


# ---- what the workers run --------------------------------------------------

def build_config(task, index: int, opt_level: int = 3) -> BuildResult:
    """Instantiate and compile one config (in a build worker)."""
    t0 = time.perf_counter()
    from ..ir.diagnostics import DiagnosticError
    from ..ir.pass_manager import PassManager, instantiate, parse_pipeline
    from ..ir.registry import get_pass_class
    try:
        m = task.instantiate(index)
        PassManager(instantiate(parse_pipeline("apply-schedule"), get_pass_class)).run(m)
    except DiagnosticError as e:
        return BuildResult(index, ErrorNo.INSTANTIATION_ERROR, _one_line(e), time=time.perf_counter() - t0)
    except Exception as e:   # noqa: BLE001 - a candidate's failure is a record
        return BuildResult(index, ErrorNo.INSTANTIATION_ERROR, _one_line(e), time=time.perf_counter() - t0)
    try:
        PassManager(instantiate(parse_pipeline("lower-te-to-tir,lower-tir"), get_pass_class)).run(m)
        from ..backend.llvm import jit
        f = next(op for op in m.body.ops if op.name == "tir.func")
        from ..ir import types as T
        params = [(list(b.type.shape), np.dtype(T.to_numpy_dtype(b.type.element_type)).str,
                   i >= len(f.inputs)) for i, b in enumerate(list(f.inputs) + list(f.outputs))]
        obj = jit.emit_object(m, task.build_target, opt_level)
    except Exception as e:   # noqa: BLE001
        return BuildResult(index, ErrorNo.COMPILE_HOST, _one_line(e), time=time.perf_counter() - t0)
    return BuildResult(index, obj=obj, func=f.sym_name, params=params, time=time.perf_counter() - t0)


def run_built(b: BuildResult, opt: MeasureOption, target: str):
    """Time one built config (in the runner).  Returns (costs, outputs)."""
    from ..backend.llvm import jit
    from ..runtime.ndarray import random_array, zeros_aligned
    lib = jit.load_object(b.obj, target)
    kernel = lib[b.func]
    rng = np.random.default_rng(opt.seed)
    arrays = [zeros_aligned(tuple(shape), dtype) if is_output else random_array(tuple(shape), dtype, rng)
              for shape, dtype, is_output in b.params]
    kernel(*arrays)   # checked once; then timed without the checks
    outputs = [a.copy() for a, (_, _, is_out) in zip(arrays, b.params) if is_out]
    cargs = [a.ctypes.data for a in arrays]
    call = kernel.cfunc
    flush = np.empty(64 << 20 >> 3) if opt.flush_cache else None
    number = max(1, opt.number)
    for _ in range(number):   # a warm-up round, untimed: the first calls through ctypes are slower
        call(*cargs)
    costs = []
    while len(costs) < max(1, opt.repeat):
        if flush is not None:
            flush[...] = 1.0
        t0 = time.perf_counter()
        for _ in range(number):
            call(*cargs)
        dt = time.perf_counter() - t0
        if dt * 1e3 < opt.min_repeat_ms and not costs:   # grow number, then restart the rounds
            number = min(number * max(2, int(opt.min_repeat_ms / max(dt * 1e3, 1e-3))), 1 << 24)
            continue
        costs.append(dt / number)
    return costs, outputs


def _one_line(e) -> str:
    """The first line of an error; the class name where it is a bug's."""
    from ..ir.diagnostics import DiagnosticError
    from ..ir.pass_manager import PassFailure
    text = str(e).strip().splitlines()
    head = text[0] if text else ""
    if not isinstance(e, (DiagnosticError, PassFailure)):
        head = f"{type(e).__name__}: {head}"
    return head[:300]


def serve(rfile, wfile):
    """A worker's loop (``python -m tvmd.autotvm.worker``): framed pickles
    of (function name, args) in, ("ok", value) or ("error", message) out.
    Only the parent that started the worker writes to its stdin."""
    import pickle
    import struct
    fns = {"build": build_config, "run": run_built}
    while True:
        head = rfile.read(8)
        if len(head) < 8:
            return
        name, args = pickle.loads(rfile.read(struct.unpack("<Q", head)[0]))
        try:
            reply = ("ok", fns[name](*args))
        except Exception as e:   # noqa: BLE001 - reported as the candidate's error
            reply = ("error", _one_line(e))
        data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        wfile.write(struct.pack("<Q", len(data)) + data)
        wfile.flush()


# ---- the parent's side -----------------------------------------------------

class WorkerLost(Exception):
    """The worker crashed or ran past its time; it has been killed."""

    def __init__(self, why: str, timed_out: bool):
        super().__init__(why)
        self.timed_out = timed_out


class Worker:
    """One child process (``python -m tvmd.autotvm.worker``: it imports
    nothing of the user's script) serving calls; killed and restarted when a
    call crashes it or runs past its time."""

    def __init__(self, max_calls: int = 0):
        self.proc = None
        self.calls = 0
        self.max_calls = max_calls   # restart after this many (loaded objects are never freed)

    def _start(self):
        import subprocess
        import sys
        self.proc = subprocess.Popen([sys.executable, "-m", "tvmd.autotvm.worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        self.calls = 0

    def call(self, name, args, timeout):
        import pickle
        import select
        import struct
        if self.proc is None or self.proc.poll() is not None or (self.max_calls and self.calls >= self.max_calls):
            self.stop()
            self._start()
        self.calls += 1
        data = pickle.dumps((name, args), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.proc.stdin.write(struct.pack("<Q", len(data)) + data)
            self.proc.stdin.flush()
            out = self.proc.stdout
            ready, _, _ = select.select([out], [], [], timeout)
            if not ready:
                self.kill()
                raise WorkerLost(f"timed out after {timeout:g} s", True)
            head = out.read(8)
            if len(head) < 8:
                raise EOFError
            status, value = pickle.loads(out.read(struct.unpack("<Q", head)[0]))
        except (EOFError, OSError, pickle.UnpicklingError, struct.error):
            self.proc.wait(5)
            code = self.proc.returncode
            self.kill()
            raise WorkerLost(_exit_text(code), False) from None
        if status == "error":
            raise RuntimeError(value)
        return value

    def kill(self):
        p, self.proc = self.proc, None
        if p is not None:
            import os
            import signal
            try:
                os.killpg(p.pid, signal.SIGKILL)   # its own session: kernel threads and all
            except (ProcessLookupError, PermissionError):
                pass
            p.wait()
            for f in (p.stdin, p.stdout):
                try:
                    f.close()
                except OSError:
                    pass

    def stop(self):
        self.kill()


def _exit_text(code) -> str:
    import signal
    if code is not None and code < 0:
        try:
            return f"the process died of {signal.Signals(-code).name}"
        except ValueError:
            return f"the process died of signal {-code}"
    return f"the process exited (code {code})"


def build_payload(task, index: int):
    """What a build worker is sent for config `index`, made here, in the
    tuner's process, where a Python template's code lives (Task.payload);
    a config that cannot even be instantiated is its BuildResult."""
    try:
        return task.payload(index)
    except Exception as e:   # noqa: BLE001 - a Python template that fails for this config
        return BuildResult(index, ErrorNo.INSTANTIATION_ERROR, _one_line(e))


def build_on(w: Worker, payload, index: int, option: MeasureOption) -> BuildResult:
    """Build config `index` from its payload (build_payload) on the build
    worker `w` (here, or on a Dask worker: measure_dask.py); a lost worker or
    an error becomes the BuildResult."""
    if isinstance(payload, BuildResult):
        return payload
    try:
        b = w.call("build", payload, option.build_timeout)
        b.index = index   # a payload may number its one config otherwise
        return b
    except WorkerLost as e:
        no = ErrorNo.BUILD_TIMEOUT if e.timed_out else ErrorNo.COMPILE_HOST
        return BuildResult(index, no, f"build {e}")
    except RuntimeError as e:
        return BuildResult(index, ErrorNo.COMPILE_HOST, str(e))


def run_on(w: Worker, b: BuildResult, option: MeasureOption, target: str):
    """(costs, outputs, error_no, error_msg) of running a built config on
    the runner `w`; a crash, a timeout or an error becomes the error code."""
    try:
        costs, outs = w.call("run", (b, option, target), option.timeout)
        return costs, outs, ErrorNo.NO_ERROR, None
    except WorkerLost as e:
        return None, None, ErrorNo.RUN_TIMEOUT if e.timed_out else ErrorNo.RUNTIME_DEVICE, f"run {e}"
    except RuntimeError as e:
        return None, None, ErrorNo.RUNTIME_DEVICE, str(e)


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


class Measurer:
    """What every measurer shares: measuring a batch, checking outputs,
    making records.  A subclass says how to build and run (here: local
    processes; autotvm/measure_dask.py: a Dask cluster) by implementing
    ``build(task, indices) -> [BuildResult]``, ``run(task, build_result) ->
    (costs, outputs, error_no, error_msg)``, ``n_parallel`` and ``close()``."""

    def __init__(self, option: MeasureOption | None = None):
        self.option = option or MeasureOption()
        # (workload, code hash) -> outputs of the reference config: two
        # templates of one workload (a name and shapes) may compute different things
        self.reference = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        pass

    def measure(self, task, indices) -> list[Record]:
        """One record per config, in the order given."""
        t0 = time.perf_counter()
        builds = self.build(task, indices)
        build_wall = (time.perf_counter() - t0) / max(1, len(indices))
        return [self.finish(task, b, build_wall) for b in builds]

    def finish(self, task, b: BuildResult, build_wall: float = 0.0) -> Record:
        """Run a built config, check it, and make its record."""
        t0 = time.perf_counter()
        costs, msg, no = [FAILED_COST], b.error_msg, b.error_no
        if no == ErrorNo.NO_ERROR:
            got, outs, no, msg = self.run(task, b)
            if no == ErrorNo.NO_ERROR:
                costs = got
                msg = self.check(task, b.index, outs)
                if msg:
                    no, costs = ErrorNo.WRONG_ANSWER, [FAILED_COST]
        return make_record(task, b.index, costs, no, build_wall + time.perf_counter() - t0, msg)

    def check(self, task, index, outs) -> str | None:
        """None when `outs` agree with the reference (the first outputs seen
        for the task: the default config's, as :meth:`ensure_reference`
        measures it first), else what differs."""
        if not self.option.check_correctness:
            return None
        ref = self.reference.setdefault((task.workload, task.code_hash), outs)
        return None if ref is outs else compare_outputs(ref, outs)

    def ensure_reference(self, task):
        """Measure the default config first, so later configs are checked
        against its outputs (if it fails, the first config that runs is the
        reference).  Returns its record, or None when one exists already."""
        if (task.workload, task.code_hash) in self.reference:
            return None
        (rec,) = self.measure(task, [task.config_space.default().index])
        return rec



class LocalMeasurer(Measurer):
    """Builds on ``n_parallel`` local processes, runs on one."""

    def __init__(self, option: MeasureOption | None = None):
        super().__init__(option)
        n = self.option.n_parallel or cpu_count()
        self.builders = [Worker() for _ in range(n)]
        self.runner = Worker(max_calls=200)
        self.pool = ThreadPoolExecutor(n)
        self.free = list(self.builders)
        self.lock = threading.Lock()

    @property
    def n_parallel(self) -> int:
        return len(self.builders)

    def close(self):
        self.pool.shutdown()
        for w in self.builders + [self.runner]:
            w.stop()

    # building
    def _build_one(self, task, index):
        with self.lock:
            w = self.free.pop()
        try:
            return build_on(w, build_payload(task, index), index, self.option)
        finally:
            with self.lock:
                self.free.append(w)

    def build(self, task, indices):
        return list(self.pool.map(lambda i: self._build_one(task, i), indices))

    # running
    def run(self, task, b: BuildResult):
        """(costs, outputs, error_no, error_msg) of one built config."""
        return run_on(self.runner, b, self.option, task.build_target)


def compare_outputs(ref, outs) -> str | None:
    for k, (r, o) in enumerate(zip(ref, outs)):
        if r.shape != o.shape:
            return f"output {k} has shape {o.shape}, the default config's {r.shape}"
        if r.dtype.kind == "f":
            scale = float(np.max(np.abs(r))) if r.size else 0.0
            tol = 1e-3 * max(scale, 1.0)
            bad = ~np.isclose(o, r, rtol=1e-3, atol=tol, equal_nan=True)
        else:
            bad = o != r
        if bad.any():
            at = tuple(int(x) for x in np.argwhere(bad)[0])
            return (f"wrong answer: output {k}{list(at)} is {o[at].item()!r}, the default config gives "
                    f"{r[at].item()!r} "
                    f"({int(bad.sum())} of {r.size} elements differ)")
    return None


def make_record(task, index, costs, error_no, all_cost, msg=None) -> Record:
    space = task.config_space
    values = space.get(index).values
    return Record(task.target, task.name, task.args, index, entity_json(values, space.kinds()), costs,
                  error_no, round(all_cost, 6), round(time.time(), 3), task.code_hash, {}, msg)
