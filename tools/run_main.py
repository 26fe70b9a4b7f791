"""tvm-run: compile a relay model (or a lowered module) and run its ``@main``.

    tvm-run model.relay|lowered.mlir|model.onnx [--onnx model.onnx]
            [--input x=x.npy ...] [--input-shape x=1x3x224x224] [--random-inputs] [--seed N]
            [--output out.npz|out.npy | -o F] [--output-dir D] [--profile] [--repeat N]
            [--opt-level N] [--reference model.relay] [--rtol 1e-5] [--atol 1e-5]
            [--target T] [--entry main] [--tuning-log tune.json]
            [--mixed-precision bfloat16|float16] [--quantize-weights int8]

A module without tir.func kernels is relay: it is compiled by
``tvmd.runtime.build`` (graph passes, lower-relay-to-te, apply-schedule,
lower-te-to-tir, lower-tir, LLVM JIT); a lowered module (kernels and a
relay @main calling them) runs as it is.  An ``.onnx`` file (or ``--onnx``)
is imported first (``--input-shape`` fixes dynamic input dimensions).
``--profile`` prints each kernel's calls, time, share and shapes, sorted by
time, plus the memory plan; ``--repeat N`` runs N times (the profile sums
them and tvm-run prints the median time per run).

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

import math
import os
import sys

from .cmdline import ToolDriver, take_input, report_internal_error, take_value, tool_main

USAGE = ("usage: tvm-run model.relay|lowered.mlir|model.onnx [--input NAME=FILE.npy ...] [--input-shape NAME=DIMS] "
         "[--random-inputs] [--seed N] [--output F.npz|F.npy] [--profile] [--repeat N] [--opt-level N] "
         "[--reference model.relay] [--rtol R] [--atol A] [--output-dir D] [--target T] [--entry main] "
         "[--tuning-log F] [--mixed-precision bfloat16|float16] [--quantize-weights int8]")

HELP = """\
Compiles a relay model (graph passes, kernels lowered to TIR, LLVM JIT) -- or
every tir.func of an already lowered module -- and runs @main.

  --onnx FILE          an ONNX model to import and run (also: a positional *.onnx)
  --input NAME=FILE    an input array (.npy) for parameter NAME (or its position)
  --input-shape NAME=DIMS   an ONNX input's shape, e.g. x=1x3x224x224
  --random-inputs      random data for every input not given (normal floats, small ints)
  --seed N             random seed (default 0)
  --output F, -o F     save the outputs: F.npz (out0, out1, ...) or F.npy (one output)
  --profile            print each kernel's calls, total ms, share and shapes, by time
  --repeat N           run N times (default 1); prints the median time per run
  --opt-level N        graph optimisation level 0..3 for a relay model (default 3)
  --reference FILE     the unlowered relay module: run it too and compare outputs
  --rtol R, --atol A   comparison tolerances (default 1e-5 each)
  --output-dir D       save the outputs as D/out0.npy, D/out1.npy, ...
  --target T           'llvm' (default) or a CUDA target where a GPU and pycuda exist
  --entry NAME         the function to run (default main)
  --tuning-log FILE    build each kernel with its best config in an AutoTVM log (tvm-tune)
  --mixed-precision T  run the products in bfloat16 or float16, summed in float32
                       (--to-mixed-precision before fuse-ops; the signature stays float32)
  --quantize-weights int8   constant dense / matmul weights as int8 with a float32 scale per
                       output column (--quantize-weights: weight-only, the sums float32)
"""

VALUE_FLAGS = ("--input", "--seed", "--reference", "--rtol", "--atol", "--output-dir", "--target", "--entry",
               "--onnx", "--input-shape", "--output", "-o", "--repeat", "--opt-level", "--tuning-log",
               "--mixed-precision", "--quantize-weights")


class Options:
    def __init__(self):
        self.input = None
        self.input_index = None
        self.inputs = []          # (name, path, arg index)
        self.random = False
        self.random_index = -1
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
        self.entry_index = None
        self.onnx = False
        self.shapes = {}          # ONNX input name -> (shape, arg index)
        self.output = None
        self.output_index = None
        self.profile = False
        self.repeat = 1
        self.opt_level = 3
        self.tuning_log = self.tuning_log_index = None
        self.mixed_precision = None
        self.quantize_weights = None


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
        if name in ("--random-inputs", "--profile"):
            setattr(o, name[2:].replace("-inputs", ""), True)
            if name == "--random-inputs":
                o.random_index = i
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
                seed = int(value)
            except ValueError:
                seed = -1
            if seed < 0:
                raise cl.error(vi, f"--seed takes a non-negative integer, got '{value}'", voff)
            o.seed = seed
        elif name in ("--rtol", "--atol"):
            try:
                tol = float(value)
            except ValueError:
                tol = math.nan
            if not math.isfinite(tol) or tol < 0:   # NaN would make every comparison pass
                raise cl.error(vi, f"{name} takes a finite number >= 0, got '{value}'", voff)
            setattr(o, name[2:], tol)
        elif name == "--reference":
            o.reference, o.reference_index = value, vi
        elif name == "--output-dir":
            o.output_dir, o.output_dir_index = value, vi
        elif name == "--target":
            o.target, o.target_index, o.target_offset = value, vi, voff
        elif name == "--tuning-log":
            o.tuning_log, o.tuning_log_index = value, vi
        elif name == "--mixed-precision":
            if value not in ("bfloat16", "float16"):
                raise cl.error(vi, f"--mixed-precision takes bfloat16 or float16, got '{value}'", voff)
            if o.quantize_weights:
                raise cl.error(vi, "--mixed-precision and --quantize-weights do not combine", voff)
            o.mixed_precision = value
        elif name == "--quantize-weights":
            if value != "int8":
                raise cl.error(vi, f"--quantize-weights takes int8, got '{value}'", voff)
            if o.mixed_precision:
                raise cl.error(vi, "--quantize-weights and --mixed-precision do not combine", voff)
            o.quantize_weights = value
        elif name == "--onnx":
            take_input(o, value, vi, cl, "input module")
            o.onnx = True
        elif name == "--input-shape":
            k, sep, dims = value.partition("=")
            try:
                shape = [int(d) for d in dims.split("x")] if dims not in ("", "scalar") else []
                if any(d < 0 for d in shape):
                    raise ValueError
            except ValueError:
                shape = None
            if not sep or not k or shape is None:
                raise cl.error(vi, "--input-shape takes NAME=DIMS, e.g. x=1x3x224x224")
            o.shapes[k] = (shape, vi)
        elif name in ("--output", "-o"):
            if not value.endswith((".npz", ".npy")):
                raise cl.error(vi, f"--output must name a .npz or .npy file, got '{value}'")
            o.output, o.output_index = value, vi
        elif name in ("--repeat", "--opt-level"):
            try:
                num = int(value)
            except ValueError:
                num = -1
            lo, hi = (1, 10 ** 9) if name == "--repeat" else (0, 3)
            if not lo <= num <= hi:
                raise cl.error(vi, f"{name} takes an integer in {lo}..{hi if name != '--repeat' else 'N'}, "
                                   f"got '{value}'")
            setattr(o, name[2:].replace("-", "_"), num)
        else:
            o.entry, o.entry_index = value, vi
    if o.input is None:
        raise cl.error(-1, "no input module given")
    if o.input.endswith(".onnx"):
        o.onnx = True
    if o.shapes and not o.onnx:
        raise cl.error(next(iter(o.shapes.values()))[1], "--input-shape applies to ONNX models only")
    return o


_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


def _npy_header(f):
    """(shape, fortran_order, dtype) of the .npy file `f`, positioned at its data."""
    from numpy.lib import format as npf
    version = npf.read_magic(f)
    if version == (1, 0):
        return npf.read_array_header_1_0(f)
    if version == (2, 0):
        return npf.read_array_header_2_0(f)
    try:   # 3.0 (utf-8 field names) has no public reader
        from numpy.lib import _format_impl
        return _format_impl._read_array_header(f, version)
    except (ImportError, AttributeError):
        raise ValueError(f"unsupported .npy format version {version[0]}.{version[1]}") from None


def load_npy(path, error):
    """The array in the .npy file `path`, read with ``allow_pickle=False``
    after checking that the file is what its header says (so a corrupt
    header cannot ask for a huge allocation); `error(message)` makes the
    exception for a file that cannot be used."""
    import numpy as np
    import zipfile
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(len(_NPY_MAGIC))
            if size == 0:
                raise error(f"cannot read '{path}' as a .npy array: the file is empty")
            if head.startswith(_ZIP_MAGIC):
                try:
                    with zipfile.ZipFile(f) as z:
                        bad = z.testzip()
                except (zipfile.BadZipFile, EOFError, ValueError, OSError) as e:
                    raise error(f"cannot read '{path}': a truncated or corrupt .npz archive ({e})") from None
                if bad is not None:
                    raise error(f"cannot read '{path}': a corrupt .npz archive (member '{bad}' is damaged)")
                raise error(f"'{path}' is an .npz archive; give one .npy array per input")
            if head != _NPY_MAGIC:
                raise error(f"cannot read '{path}' as a .npy array: not a .npy file (no NUMPY magic)")
            f.seek(0)
            try:
                shape, _, dtype = _npy_header(f)
            except (ValueError, EOFError, SyntaxError, TypeError) as e:
                raise error(f"cannot read '{path}' as a .npy array: a malformed header") from None
            if dtype.hasobject:
                raise error(f"cannot read '{path}': it holds Python objects ({dtype}), which need pickle")
            count = 1
            for d in shape:
                count *= int(d)
            need, have = count * dtype.itemsize, size - f.tell()
            if need > have:
                raise error(f"cannot read '{path}' as a .npy array: its header says {dtype} of shape "
                            f"{list(shape)} ({need} bytes of data), but the file holds only {max(have, 0)} "
                            f"(truncated or corrupt)")
    except OSError as e:
        raise error(f"cannot read '{path}': {e.strerror or e}") from None
    try:
        a = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise error(f"cannot read '{path}' as a .npy array: {e}") from None
    if not isinstance(a, np.ndarray):
        raise error(f"'{path}' is an .npz archive; give one .npy array per input")
    return a


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
        except MemoryError as e:   # the model is too big for this machine: not a bug
            self.report(self.cl.error(-1, f"out of memory: {e or 'an allocation failed'}"))
            return 1
        except Exception as e:   # a bug: one line saying where, not a traceback
            report_internal_error(e)
            return 1

    def load_onnx(self, o, cl):
        """The relay module of an ONNX model."""
        from .cmdline import import_onnx
        return import_onnx(cl, o.input, o.input_index, o.shapes)

    def compile(self, o, cl, target):
        """(executor-like object with run_list/input_names/input_types, CompiledModel or None)."""
        from ..runtime.executor import ExecutionError, Executor
        t_import = None
        if o.onnx:
            import time
            t0 = time.perf_counter()
            module = self.load_onnx(o, cl)
            t_import = time.perf_counter() - t0
        else:
            module = self.load_module(o.input, cl, o.input_index)
        lowered = any(op.name == "tir.func" for op in module.body.ops)
        if o.entry_index is not None and not any(
                op.name == "relay.func" and op.sym_name == o.entry for op in module.body.ops):
            raise cl.error(o.entry_index, f"the module has no relay.func @{o.entry} to run")
        if lowered:
            try:
                return Executor(module, target, o.entry), None
            except ExecutionError as e:
                raise cl.error(o.input_index, str(e)) from None
        from ..runtime.build import BuildError, build
        try:
            cm = build(module, target, o.opt_level, entry=o.entry, tuning_log=o.tuning_log,
                       mixed_precision=o.mixed_precision, quantize_weights=o.quantize_weights)
        except BuildError as e:
            raise cl.error(o.input_index, str(e)) from None
        except ExecutionError as e:
            raise cl.error(o.input_index, str(e)) from None
        if t_import is not None:
            cm.phase_times["import"] = t_import
        return cm, cm

    def read_inputs(self, o, cl, names, types):
        import numpy as np

        from ..ir import types as T
        from ..ir.attributes import tensor_bytes
        from ..runtime.ndarray import available_memory, random_array
        given = {}
        for name, path, vi in o.inputs:
            idx = names.index(name) if name in names else (int(name) if name.isdigit() else None)
            if idx is None or not 0 <= idx < len(names):
                raise cl.error(vi, f"@{o.entry} has no input '{name}' (inputs: {', '.join(names)})")
            a = load_npy(path, lambda msg: cl.error(vi, msg))
            t = types[idx]
            if isinstance(t, T.TensorType):
                if a.dtype != np.dtype(t.dtype):
                    raise cl.error(vi, f"input '{names[idx]}' is {t}, but '{path}' holds {a.dtype}")
                if a.ndim != t.rank or any(d is not None and d != s for d, s in zip(t.shape, a.shape)):
                    raise cl.error(vi, f"input '{names[idx]}' is {t}, but '{path}' has shape {list(a.shape)}")
            given[idx] = a
        rng = np.random.default_rng(o.seed)
        need = sum(3 * (tensor_bytes(t) or 0) for k, t in enumerate(types) if k not in given and o.random)
        have = available_memory()
        if have is not None and need > have:   # before numpy tries and the kernel kills us
            raise cl.error(o.random_index, f"random inputs of {need // 3} bytes need more memory than is "
                                           f"available ({have} bytes)")
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
        return inputs

    def execute(self, o, cl) -> int:
        import time

        import numpy as np

        from ..runtime.executor import ExecutionError, reference_run
        from ..runtime.program import Profile
        from ..backend.spec import TargetError, parse_target
        try:
            target = parse_target(o.target)
        except TargetError as e:
            raise cl.error(o.target_index, f"invalid target: {e}", o.target_offset + e.offset) from None
        ex, cm = self.compile(o, cl, target)
        inputs = self.read_inputs(o, cl, ex.input_names, ex.input_types)
        profile = Profile() if o.profile else None
        times = []
        try:
            for _ in range(o.repeat):
                t0 = time.perf_counter()
                outs = ex.run_list(*inputs, profile=profile)
                times.append(time.perf_counter() - t0)
        except (ExecutionError, TypeError, ValueError) as e:
            raise cl.error(o.input_index, f"execution failed: {e}") from None
        outs = [np.asarray(x) if not isinstance(x, (tuple, list)) else x for x in outs]
        w = self.out.write
        for k, a in enumerate(outs):
            if isinstance(a, (tuple, list)):
                w(f"output {k}: a tuple of {len(a)}\n")
            else:
                w(f"output {k}: {_type_text(a)} {_preview(a)}\n")
        if o.repeat > 1:
            w(f"time per run: median {np.median(times) * 1e3:.3f} ms over {o.repeat} runs\n")
        if profile is not None:
            w(profile.table() + "\n")
            if cm is not None:
                w(cm.summary() + "\n")
            else:
                plan = ex.memory_plan
                if plan is not None:
                    w("memory: " + plan.summary() + "\n")
        if o.output_dir:
            self.save(outs, o, cl)
        if o.output:
            self.save_file(outs, o, cl)
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

    def save_file(self, outs, o, cl):
        """--output: one .npy (a single output) or an .npz of out0, out1, ..., written atomically."""
        import io

        import numpy as np

        from ..ir.files import write_atomic_bytes
        flat = []
        for a in outs:
            flat.extend(a if isinstance(a, (tuple, list)) else [a])
        buf = io.BytesIO()
        if o.output.endswith(".npy"):
            if len(flat) != 1:
                raise cl.error(o.output_index, f"the model has {len(flat)} outputs: use a .npz file")
            np.save(buf, np.asarray(flat[0]), allow_pickle=False)
        else:
            np.savez(buf, **{f"out{k}": np.asarray(a) for k, a in enumerate(flat)})
        try:
            write_atomic_bytes(o.output, buf.getvalue())
        except OSError as e:
            raise cl.error(o.output_index, f"cannot write '{o.output}': {e.strerror}") from None

    def save(self, outs, o, cl):
        import io

        import numpy as np

        from ..ir.files import write_atomic_bytes
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
