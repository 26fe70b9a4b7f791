"""tvm-run: compile a lowered module and run its relay ``@main``.

    tvm-run lowered.mlir [--input x=x.npy ...] [--random-inputs] [--seed N]
            [--reference model.relay] [--rtol 1e-5] [--atol 1e-5]
            [--output-dir D] [--target T] [--entry main]

Inputs are named after main's parameters (``--input x=x.npy``; a position
works too: ``--input 0=x.npy``); ``--random-inputs`` fills the rest with
seeded random data.  Arrays are read with ``numpy.load(allow_pickle=False)``.
It prints each output's type and a few values; ``--output-dir`` saves them
as ``out0.npy``, ...  With ``--reference``, the unlowered relay module runs
on the same inputs through the relay interpreter, and tvm-run prints the
max abs/rel error per output and PASS or FAIL (``np.allclose`` with
``--rtol``/``--atol``); FAIL exits 1.  Errors are diagnostics, never
tracebacks.
"""

from __future__ import annotations

import os
import sys

from .cmdline import ToolDriver, take_input, report_internal_error, take_value, tool_main

USAGE = ("usage: tvm-run lowered.mlir [--input NAME=FILE.npy ...] [--random-inputs] [--seed N] "
         "[--reference model.relay] [--rtol R] [--atol A] [--output-dir D] [--target T] [--entry main]")

HELP = """\
Compiles every tir.func of a lowered module (LLVM JIT by default) and runs @main.

  --input NAME=FILE    an input array (.npy) for parameter NAME (or its position)
  --random-inputs      random data for every input not given (normal floats, small ints)
  --seed N             random seed (default 0)
  --reference FILE     the unlowered relay module: run it too and compare outputs
  --rtol R, --atol A   comparison tolerances (default 1e-5 each)
  --output-dir D       save the outputs as D/out0.npy, D/out1.npy, ...
  --target T           'llvm' (default) or a CUDA target where a GPU and pycuda exist
  --entry NAME         the function to run (default main)
"""

VALUE_FLAGS = ("--input", "--seed", "--reference", "--rtol", "--atol", "--output-dir", "--target", "--entry")


class Options:
    def __init__(self):
        self.input = None
        self.input_index = None
        self.inputs = []          # (name, path, arg index)
        self.random = False
        self.seed = 0
        self.reference = None
        self.reference_index = None
        self.rtol = 1e-5
        self.atol = 1e-5
        self.output_dir = None
        self.output_dir_index = None
        self.target = "llvm"
        self.target_index = None
        self.target_offset = 0
        self.entry = "main"


def parse_args(argv, cl):
    o = Options()
    i, n = 0, len(argv)
    while i < n:
        a = argv[i]
        if a == "-" or not a.startswith("-"):
            take_input(o, a, i, cl, "input module")
            i += 1
            continue
        name, eq, value = a.partition("=") if a.startswith("--") else (a, "", "")
        if name == "--random-inputs":
            o.random = True
            i += 1
            continue
        if name not in VALUE_FLAGS:
            raise cl.error(i, f"unknown option '{name}'")
        value, vi, voff, i = take_value(argv, i, name, eq, value, cl)
        if name == "--input":
            k, sep, path = value.partition("=")
            if not sep or not k or not path:
                raise cl.error(vi, "--input takes NAME=FILE.npy")
            o.inputs.append((k, path, vi))
        elif name == "--seed":
            try:
                o.seed = int(value)
            except ValueError:
                raise cl.error(vi, f"--seed takes an integer, got '{value}'") from None
        elif name in ("--rtol", "--atol"):
            try:
                setattr(o, name[2:], float(value))
            except ValueError:
                raise cl.error(vi, f"{name} takes a number, got '{value}'") from None
        elif name == "--reference":
            o.reference, o.reference_index = value, vi
        elif name == "--output-dir":
            o.output_dir, o.output_dir_index = value, vi
        elif name == "--target":
            o.target, o.target_index, o.target_offset = value, vi, voff
        else:
            o.entry = value
    if o.input is None:
        raise cl.error(-1, "no input module given")
    return o


def _preview(a, k=6):
    import numpy as np
    flat = np.asarray(a).reshape(-1)
    vals = ", ".join(f"{x:.6g}" if flat.dtype.kind == "f" else str(x) for x in flat[:k])
    more = ", ..." if flat.size > k else ""
    return f"[{vals}{more}]"


def _type_text(a):
    from ..ir.types import TensorType, from_numpy_dtype
    return str(TensorType(a.shape, from_numpy_dtype(a.dtype)))


class Driver(ToolDriver):
    PROG = "tvm-run"

    def __init__(self, argv):
        super().__init__(argv)
        self.out = sys.stdout

    def load_module(self, path, cl, index):
        from ..parser import parse_module
        fname, text = self.read_input(path, index)
        return parse_module(text, fname)

    def run(self) -> int:
        argv = self.argv
        if any(a in ("--help", "-h") for a in argv):
            sys.stdout.write(USAGE + "\n\n" + HELP)
            return 0
        from ..ir.diagnostics import DiagnosticError
        try:
            o = parse_args(argv, self.cl)
            return self.execute(o, self.cl)
        except DiagnosticError as e:
            self.report(e)
            return 1
        except Exception as e:   # a bug, or a missing GPU stack: a message, not a traceback
            report_internal_error(e, "error")
            return 1

    def execute(self, o, cl) -> int:
        import numpy as np

        from ..runtime.executor import ExecutionError, Executor, reference_run
        from ..runtime.ndarray import random_array
        from ..target.spec import TargetError, parse_target
        try:
            target = parse_target(o.target)
        except TargetError as e:
            raise cl.error(o.target_index, f"invalid target: {e}", o.target_offset + e.offset) from None
        module = self.load_module(o.input, cl, o.input_index)
        try:
            ex = Executor(module, target, o.entry)
        except ExecutionError as e:
            raise cl.error(o.input_index, str(e)) from None
        names, types = ex.input_names, ex.input_types
        given = {}
        for name, path, vi in o.inputs:
            idx = names.index(name) if name in names else (int(name) if name.isdigit() else None)
            if idx is None or not 0 <= idx < len(names):
                raise cl.error(vi, f"@{o.entry} has no input '{name}' (inputs: {', '.join(names)})")
            try:
                given[idx] = np.load(path, allow_pickle=False)
            except (OSError, ValueError) as e:
                raise cl.error(vi, f"cannot read '{path}' as a .npy array: {e}") from None
        rng = np.random.default_rng(o.seed)
        inputs = []
        for k, (name, t) in enumerate(zip(names, types)):
            if k in given:
                inputs.append(given[k])
            elif o.random:
                if not getattr(t, "is_static", False):
                    raise cl.error(-1, f"input '{name}' has type {t}: random data needs a static shape")
                inputs.append(random_array(t.shape, t.dtype, rng))
            else:
                missing = [nm for j, nm in enumerate(names) if j not in given]
                raise cl.error(-1, f"missing input(s) {', '.join(missing)} for @{o.entry}: "
                                   f"give --input NAME=FILE.npy or --random-inputs")
        try:
            outs = ex.run_list(*inputs)
        except (ExecutionError, TypeError, ValueError) as e:
            raise cl.error(o.input_index, f"execution failed: {e}") from None
        outs = [np.asarray(x) for x in outs]
        w = self.out.write
        for k, a in enumerate(outs):
            w(f"output {k}: {_type_text(a)} {_preview(a)}\n")
        if o.output_dir:
            self.save(outs, o, cl)
        if o.reference is None:
            return 0
        ref_mod = self.load_module(o.reference, cl, o.reference_index)
        try:
            refs = reference_run(ref_mod, o.entry, *inputs)
        except ExecutionError as e:
            raise cl.error(o.reference_index, f"the reference failed: {e}") from None
        if len(refs) != len(outs):
            raise cl.error(o.reference_index, f"the reference has {len(refs)} output(s), the module {len(outs)}")
        ok = True
        for k, (a, r) in enumerate(zip(outs, refs)):
            r = np.asarray(r)
            if a.shape != r.shape:
                w(f"output {k}: shape {list(a.shape)} vs reference {list(r.shape)}: FAIL\n")
                ok = False
                continue
            diff = np.abs(a.astype(np.float64) - r.astype(np.float64))
            max_abs = float(diff.max()) if diff.size else 0.0
            rel = diff / np.maximum(np.abs(r.astype(np.float64)), np.finfo(np.float32).tiny)
            max_rel = float(rel.max()) if rel.size else 0.0
            good = bool(np.allclose(a, r, rtol=o.rtol, atol=o.atol, equal_nan=True))
            ok &= good
            w(f"output {k}: max abs error {max_abs:.3g}, max rel error {max_rel:.3g} "
              f"(rtol {o.rtol:g}, atol {o.atol:g}): {'PASS' if good else 'FAIL'}\n")
        w("PASS\n" if ok else "FAIL\n")
        return 0 if ok else 1

    def save(self, outs, o, cl):
        import io

        import numpy as np

        from .cmdline import write_atomic_bytes
        try:
            os.makedirs(o.output_dir, exist_ok=True)
            for k, a in enumerate(outs):
                buf = io.BytesIO()
                np.save(buf, a, allow_pickle=False)
                write_atomic_bytes(os.path.join(o.output_dir, f"out{k}.npy"), buf.getvalue())
        except OSError as e:
            raise cl.error(o.output_dir_index, f"cannot write to '{o.output_dir}': {e.strerror}") from None


def main(argv=None) -> int:
    return tool_main(Driver, argv)


if __name__ == "__main__":
    sys.exit(main())
