"""Compile a whole relay module: the driver behind tvm-run and the ONNX backend.

    from tvmd.runtime.build import build
    cm = build(module_or_text, target="llvm", opt_level=3)
    y = cm.run(x)                     # numpy in, numpy out
    print(cm.summary())               # kernels, interpreted functions, memory, phase times

Phases (each timed in ``cm.phase_times``)::

    parse      relay text -> IR (when given text)
    graph      the -O<opt_level> preset of ir/registry.py (infer-type,
               simplify-inference, fold-constant, ..., fuse-ops)
    lower      per kernel: lower-relay-to-te -> apply-schedule ->
               lower-te-to-tir -> tir passes (`tir_passes`, pass names or
               pipeline elements: ``("lower-tir",)`` by default, the whole
               tir pipeline for the target; ``("tir-simplify",)`` only
               simplifies)
    codegen    every tir.func in one LLVM module, JIT-compiled
    plan       the executor: constants bound, intermediate buffers planned

Each primitive function is lowered on its own in a scratch module and moved
into the module only when every step succeeded.  With ``fallback=True`` (the
default) one that fails -- an op without a TE compute, a dynamic shape, a
strategy that rejects its attributes -- stays a relay function marked
``interpreted``, which the executor runs with the ops' numpy ``compute()``;
``cm.interpreted`` lists them with the reason, and build prints one line
on stderr for each.  An entry function that is not straight-line (control
flow, closures) is not lowered at all: the whole module runs on the relay
interpreter (``cm.mode == "interpreter"``), and one line says so.  With
``fallback=False`` either is a BuildError instead.

`progress`: None shows kernel-by-kernel progress on stderr when stderr is a
terminal (``\\r`` updates) and nothing otherwise; False never; a callable
gets ``(phase, i, n, name)``.
"""

from __future__ import annotations

import sys
import time

from ..dialects.relay.ops.function import ConstantOp as RelayConstantOp
from ..dialects.relay.ops.function import FuncOp as RelayFuncOp
from ..dialects.relay.ops.function import ReturnOp as RelayReturnOp
from .executor import EntrySignature

PHASES = ("import", "parse", "graph", "lower", "codegen", "plan")   # import: a frontend's, timed by its caller


class BuildError(Exception):
    pass


class TtyProgress:
    """One status line on a terminal, rewritten in place."""

    def __init__(self, stream):
        self.stream = stream
        self.width = 0

    def __call__(self, phase, i, n, name):
        text = f"tvmd: {phase} [{i}/{n}] {name}" if n else f"tvmd: {phase} {name}"
        text = text[:100]
        pad = max(0, self.width - len(text))
        self.width = len(text)
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()

    def done(self):
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


def _progress_fn(progress):
    if progress is False:
        return None
    if progress is None:
        stream = sys.stderr
        isatty = getattr(stream, "isatty", None)
        return TtyProgress(stream) if isatty is not None and isatty() else None
    return progress


class CompiledModel(EntrySignature):
    """A compiled module and its executor; ``run``/``run_list`` run the entry."""

    def __init__(self, module, entry, mode, executor, interpreted, kernels, phase_times, stats, reason=None):
        self.module = module
        self.entry = entry
        self.mode = mode                  # "compiled" or "interpreter"
        self.executor = executor
        self.interpreted = interpreted    # [(function name, why)]
        self.kernels = kernels            # names of the compiled kernels
        self.phase_times = phase_times    # phase -> seconds
        self.stats = stats                # pass statistics
        self.reason = reason              # why the whole module is interpreted

    @property
    def entry_op(self):
        return self.module.lookup(self.entry)

    @property
    def memory_plan(self):
        return self.executor.memory_plan if self.executor is not None else None

    def run_list(self, *inputs, profile=None, out=None):
        """The results as a list.  `out`: an array (or one per result) the
        caller owns; a kernel that computes a result writes it there, and
        those arrays are returned.  Inputs: numpy arrays or any DLPack
        producer, passed without a copy when C-contiguous."""
        if self.executor is not None:
            return self.executor.run_list(*inputs, profile=profile, out=out)
        from ..dialects.relay.interpreter import Interpreter
        from .executor import check_out
        from .ndarray import copy_into
        interp = Interpreter(self.module)
        t0 = time.perf_counter()
        outs = interp.call(interp.functions[self.entry], list(inputs), None)
        if profile is not None:
            profile.add(f"@{self.entry}", time.perf_counter() - t0, "", True)
        if out is not None:
            return copy_into(check_out(self.module.lookup(self.entry), out, inputs), outs)
        return list(outs)

    def run(self, *inputs, out=None):
        outs = self.run_list(*inputs, out=out)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def export_library(self, path, cc=None):
        """Write the model as a shared library `path` and its C header
        (runtime/export.py); returns the header's path."""
        from .export import export_library
        return export_library(self, path, cc)

    __call__ = run

    def summary(self) -> str:
        lines = [f"{len(self.kernels)} compiled kernel(s), {len(self.interpreted)} interpreted function(s)"
                 + (f"; whole module interpreted: {self.reason}" if self.reason else "")]
        for name, why in self.interpreted:
            lines.append(f"  interpreted @{name}: {why}")
        plan = self.memory_plan
        prog = self.executor.program if self.executor is not None else None
        if prog is not None:
            lines.append("entry: one native function calling the kernels" if prog.entry is not None
                         else "entry: one native function calling the kernels, sized per call"
                         if prog.dynamic_entry is not None
                         else f"entry: kernel by kernel from Python ({prog.entry_why})")
        if plan is not None:
            lines.append("memory: " + plan.summary())
        lines.append("compile time: " + ", ".join(f"{p} {self.phase_times[p]:.3f} s"
                                                  for p in PHASES if p in self.phase_times))
        return "\n".join(lines)


# The data layout convs get for llvm at -O3 (None: keep the model's).  The
# default schedule vectorizes the last axis: NHWC puts the channels there
# (64, 128, ...: whole vectors, and rows of the tile along the width), where
# NCHW leaves widths like 56 or 28 (vectors of 8 or 4).  Measured one
# thread, 3x3 convs: NHWC 140-180 GFLOP/s, NCHW 17-80 (bench/kernels.py).
LLVM_CONV_LAYOUT = "NHWC"


def graph_pipeline(opt_level, target="llvm", disabled_passes=(), mixed_precision=None, quantize_weights=None):
    """The -O<opt_level> preset; with `mixed_precision` ("bfloat16" or
    "float16"), to-mixed-precision and a fold-constant before fuse-ops
    (after the graph simplifications and fuse-attention, whose patterns
    are float32); at every level, accumulate-in-float32 before fuse-ops
    (float16 / bfloat16 products sum in float32); for llvm at -O3, then, before fuse-ops (where
    relay.build runs AlterOpLayout, at 3): convs converted to
    LLVM_CONV_LAYOUT (the weights' transforms folded), then alter-op-layout
    (constant dense weights transposed for the GEMM schedule; bf16 ones
    packed for vdpbf16ps).  With `quantize_weights` ("int8"), quantize-weights
    before alter-op-layout (llvm only).  Passes named in `disabled_passes`
    are left out (TVM's PassContext disabled_pass)."""
    from ..ir.pass_manager import instantiate, parse_pipeline
    from ..ir.registry import PASSES, PRESETS, get_pass_class
    # A model's qnn ops on constants (an ONNX QDQ model's DequantizeLinear of
    # its int8 weights) fold into float constants where
    # fake-quantization-to-integer did not take their products: left alone
    # they would dequantize every weight at every call.
    names = ["fold-constant{fold-qnn=true}" if n == "fold-constant" else n for n in PRESETS[f"O{opt_level}"]]
    at = next((i for i, n in enumerate(names) if n.startswith("fuse-ops")), len(names))
    if mixed_precision:
        if mixed_precision not in ("bfloat16", "float16"):
            raise ValueError(f"mixed_precision is 'bfloat16' or 'float16', not {mixed_precision!r}")
        names[at:at] = [f"to-mixed-precision{{dtype={mixed_precision}}}", "fold-constant"]
        at += 2
    # float16 / bfloat16 products sum in float32 at every level: in their
    # own type they round at every multiply-add
    names[at:at] = ["accumulate-in-float32"]
    at += 1
    llvm = str(target).split()[0] == "llvm"
    if opt_level >= 3 and llvm:
        # a QDQ model's products on its int8 values: after a fold-constant
        # that leaves qnn ops (the zero points' casts fold), before the
        # ones that fold the weights' dequantize away
        # (and qnn-legalize: the products of qnn.dense / qnn.conv2d, from
        # onnxruntime's dynamic quantization or QLinear ops, on int8 too)
        names[1:1] = ["fold-constant", "fake-quantization-to-integer", "qnn-legalize"]
        at += 3
    targeted = (lambda name: f"{name}{{target='{target}'}}" if str(target) != "llvm" else name)
    before_fusion = []
    if opt_level >= 3 and llvm and LLVM_CONV_LAYOUT:
        before_fusion += [f"convert-layout{{nn.conv2d={LLVM_CONV_LAYOUT}}}", "fold-constant"]
    if quantize_weights:
        if quantize_weights != "int8":
            raise ValueError(f"quantize_weights is 'int8', not {quantize_weights!r}")
        if mixed_precision:
            raise ValueError("quantize_weights and mixed_precision do not combine (the int8 weights' "
                             "products are float32)")
        if not llvm:
            raise ValueError(f"quantize_weights needs an llvm target, not {str(target)!r}")
        before_fusion.append(targeted("quantize-weights"))
    if opt_level >= 3 and llvm:
        before_fusion.append(targeted("alter-op-layout"))
    names[at:at] = before_fusion
    unknown = set(disabled_passes) - set(PASSES)
    if unknown:
        raise ValueError(f"unknown pass(es) to disable: {', '.join(sorted(unknown))}")
    names = [n for n in names if n.split("{")[0] not in set(disabled_passes)]
    return [p for _, p in instantiate(parse_pipeline(",".join(names)), get_pass_class)]


def build(module, target="llvm", opt_level=3, progress=None, fallback=True, entry="main",
          tir_passes=("lower-tir",), source_name="<model>", codegen_opt_level=None,
          tuning_log=None, disabled_passes=(), mixed_precision=None, quantize_weights=None) -> CompiledModel:
    """Compile relay `module` (an IR module or relay text); see the module docstring.
    `codegen_opt_level` is LLVM's -O level (default: `opt_level`); 0 compiles
    several times faster, for many small models (the ONNX conformance suite).
    `tuning_log`: an AutoTVM log (a path, or a list of records) whose best
    config per workload each kernel's schedule takes (autotvm/dispatch.py);
    what has no record keeps its default, and one line says how many.
    `disabled_passes`: graph passes of the preset to skip (``["fuse-attention"]``).
    `mixed_precision`: "bfloat16" or "float16" runs the products in that
    type, summed in float32 (--to-mixed-precision, TVM's ToMixedPrecision),
    before fuse-ops; the signature stays float32.  `quantize_weights`:
    "int8" stores constant dense / matmul weights as int8 with a scale per
    output column (--quantize-weights: weight-only, the data and sums
    float32), a quarter of the bytes a decoding step reads."""
    from ..ir.pass_manager import PassContext
    from .executor import Executor
    if opt_level not in (0, 1, 2, 3):
        raise ValueError(f"opt_level must be 0..3, got {opt_level}")
    report = _progress_fn(progress)
    times = {}
    t0 = time.perf_counter()
    if isinstance(module, str):
        from ..parser import parse_module
        module = parse_module(module, source_name)
        times["parse"] = time.perf_counter() - t0
    ctx = PassContext()
    try:
        # strings and references: nothing compiles them, and the graph passes
        # would only regroup ops the interpreter runs one by one anyway
        why = _interpreted_only(module)
        if why:
            if not fallback:
                raise BuildError(f"cannot compile: {why}")
            sys.stderr.write(f"tvmd: the whole model runs in the relay interpreter: {why}\n")
            return CompiledModel(module, entry, "interpreter", None, [], [], times, ctx.stats, reason=why)
        t0 = time.perf_counter()
        for p in graph_pipeline(opt_level, target, disabled_passes, mixed_precision, quantize_weights):
            if report:
                report("graph", 0, 0, p.NAME)
            p.run(module, ctx)
        times["graph"] = time.perf_counter() - t0
        f = module.lookup(entry)
        if not isinstance(f, RelayFuncOp):
            raise BuildError(f"the module has no relay.func @{entry} to compile")
        from .program import straight_line
        if not straight_line(module, f):
            why = f"@{entry} is not straight-line relay (control flow or closures)"
            if not fallback:
                raise BuildError(f"cannot compile: {why}")
            sys.stderr.write(f"tvmd: the whole model runs in the relay interpreter: {why}\n")
            return CompiledModel(module, entry, "interpreter", None, [], [], times, ctx.stats, reason=why)
        t0 = time.perf_counter()
        history = _history(tuning_log, target)
        kernels, interpreted = lower_kernels(module, target, fallback, tir_passes, ctx, report, history)
        for name, why in interpreted:
            sys.stderr.write(f"tvmd: @{name} runs in the interpreter (not compiled): {why}\n")
        if history is not None:
            for line in history.report():
                sys.stderr.write(f"tvmd: {line}\n")
        times["lower"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        lib = None
        if kernels and str(target).split()[0] == "llvm":
            if report:
                report("codegen", 0, 0, f"{len(kernels)} kernels (LLVM)")
            from ..backend.llvm import jit
            from ..backend.spec import as_target
            lib = jit.compile(module, as_target(target),
                              opt_level if codegen_opt_level is None else codegen_opt_level)
        times["codegen"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        ex = Executor(module, target, entry, opt_level, lib=lib)
        times["plan"] = time.perf_counter() - t0
        prog = ex.program
        if prog is not None and prog.entry is None and prog.entry_why and not prog.entry_why_reported:
            sys.stderr.write(f"tvmd: the model runs kernel by kernel from Python, not as one native "
                             f"function: {prog.entry_why}\n")
    finally:
        if report and hasattr(report, "done"):
            report.done()
    return CompiledModel(module, entry, "compiled", ex, interpreted, kernels, times, ctx.stats)


def _history(tuning_log, target):
    if tuning_log is None:
        return None
    from ..autotvm.dispatch import HistoryBest
    from ..autotvm.record import load
    if isinstance(tuning_log, (str, bytes)) or hasattr(tuning_log, "__fspath__"):
        return HistoryBest(load(tuning_log), str(target), str(tuning_log))
    return HistoryBest(list(tuning_log), str(target))


def _interpreted_only(module):
    """Why `module` runs only in the relay interpreter (a value that is or
    holds a string tensor or a reference), or None."""
    from ..dialects.relay.types import RefType
    from ..ir import types as T

    def why(t):
        if isinstance(t, T.TupleType):
            return next((w for w in map(why, t.types) if w), None)
        if isinstance(t, RefType):
            return "it holds references (ref_create), which nothing compiles"
        if isinstance(t, T.TensorType) and t.element_type is T.string:
            return "it holds string tensors, which nothing compiles"
        return None
    for op in module.walk():
        for v in list(op.results) + [a for region in op.regions for b in region.blocks for a in b.args]:
            w = why(v.type)
            if w:
                return w
    return None


def lower_kernels(module, target, fallback, tir_passes, ctx, report=None, history=None):
    """Lower every primitive relay function to a tir.func, one at a time;
    returns (kernel names, [(name, why) left to the interpreter])."""
    from ..conversion.relay_to_te.outline import outline_loose_ops
    from ..conversion.relay_to_te.pass_ import _pass_lifted_constants, is_lifted
    from ..conversion.te_to_tir.apply_schedule import ApplySchedule
    from ..conversion.te_to_tir.lower import LowerTEToTIR
    from ..ir.registry import get_pass_class
    outline_loose_ops(module)
    from ..ir.pass_manager import instantiate, parse_pipeline
    kind = str(target).split()[0]
    text = ",".join(f"{n}{{target={kind}}}" if n == "lower-tir" else n for n in tir_passes)
    tir = [p for _, p in instantiate(parse_pipeline(text), get_pass_class)]
    prims = [op for op in module.body.ops if isinstance(op, RelayFuncOp) and "primitive" in op.attributes
             and "interpreted" not in op.attributes]
    kernels, interpreted = [], []
    for op in module.body.ops:
        if isinstance(op, RelayFuncOp) and "interpreted" in op.attributes:
            interpreted.append((op.sym_name, op.attributes["interpreted"]))
    schedule, to_tir = ApplySchedule(), LowerTEToTIR()
    for i, rf in enumerate(prims):
        name = rf.sym_name
        if report:
            report("lower", i + 1, len(prims), name)
        try:
            func = _lower_alone(rf, target, schedule, to_tir, tir, ctx, history)
        except Exception as e:
            if not fallback:
                raise
            why = fallback_reason(e)
            rf.attributes["interpreted"] = why
            interpreted.append((name, why))
            continue
        lifted = [c for c in rf.body.ops if isinstance(c, RelayConstantOp) and is_lifted(c)]
        if reshapes_only(rf):
            from ..ir.attributes import UNIT
            func.attributes["reshape_view"] = UNIT
        grows = appends_to(rf)
        if grows is not None:
            func.attributes["append_to"] = list(grows)
        module.body.insert_before(rf, func)
        if lifted:
            _pass_lifted_constants(module, name, lifted)
        rf.erase()
        kernels.append(name)
    return kernels, interpreted


def reshapes_only(rf):
    """Whether primitive function `rf` only reshapes its one input (reshape,
    squeeze, expand_dims, batch_flatten: row-major, the same elements in
    the same order): its result can be a view of the input, which the
    executor takes for kernels of '?' sizes (runtime/dynamic.py), instead
    of the kernel's copy (GPT-2's logits at 512 tokens: 10 ms of 300)."""
    from ..dialects.relay.ops.nn import BatchFlattenOp
    from ..dialects.relay.ops.transform import ExpandDimsOp, ReshapeOp, SqueezeOp
    args = rf.body.args
    body = list(rf.body.ops)
    ops = [op for op in body if not isinstance(op, RelayReturnOp)]
    if len(args) != 1 or not ops:
        return False
    prev = args[0]
    for op in ops:
        if not isinstance(op, (ReshapeOp, SqueezeOp, ExpandDimsOp, BatchFlattenOp)) or list(op.operands) != [prev]:
            return False
        prev = op.results[0]
    return isinstance(body[-1], RelayReturnOp) and list(body[-1].operands) == [prev]


def appends_to(rf):
    """(parameter index, axis) when primitive function `rf` returns
    concatenate(param, x) along an axis with only 1s before it and '?'
    there (a KV cache's present = past + this step's keys, [1, ?, heads,
    head_dim] along 1): the past's elements are then the result's first
    ones, so the executor may grow the result in place behind a past it
    made itself (runtime/dynamic.py); else None."""
    from ..dialects.relay.ops.transform import ConcatenateOp
    body = list(rf.body.ops)
    if len(body) < 2 or not isinstance(body[-1], RelayReturnOp):
        return None
    cat = body[-2]
    if not isinstance(cat, ConcatenateOp) or len(cat.operands) != 2 or \
            list(body[-1].operands) != [cat.results[0]]:
        return None
    args = list(rf.body.args)
    if cat.operands[0] not in args:
        return None
    t = cat.results[0].type
    a = cat.attributes["axis"] % t.rank
    if t.shape[a] is not None or any(d != 1 for d in t.shape[:a]) or not all(d is not None for d in t.shape[a + 1:]):
        return None
    return args.index(cat.operands[0]), a


def lower_to_te_alone(rf, target):
    """(scratch module, te.func): primitive function `rf` lowered with its
    default schedule (a template) in a module of its own; `rf` is not
    touched.  The first step of each kernel's build, and what AutoTVM's
    task extraction (autotvm/extract.py) tunes."""
    from ..conversion.relay_to_te.pass_ import lower_function
    from ..dialects.builtin.ops import ModuleOp
    scratch = ModuleOp.create_empty()
    clone = rf.clone()
    scratch.body.append(clone)
    return scratch, lower_function(scratch, clone, True, str(target))


def _lower_alone(rf, target, schedule, to_tir, tir_passes, ctx, history=None):
    """The tir.func for primitive function `rf`, built in a scratch module
    (detached from it); `rf` itself is not touched."""
    scratch, tf = lower_to_te_alone(rf, target)
    from ..autotvm.dispatch import apply_best
    apply_best(scratch, history)   # the best config of the tuning log, or silently the defaults
    schedule.run_on(tf, ctx)
    to_tir.run_on(tf, ctx)
    func = scratch.lookup(rf.sym_name)
    for p in tir_passes:     # module passes, on a module holding this kernel alone
        p.run(scratch, ctx)
    func = scratch.lookup(rf.sym_name)
    func.detach()
    return func


def fallback_reason(e):
    """One line: why a primitive function could not be lowered."""
    from ..ir.diagnostics import DiagnosticError
    if isinstance(e, DiagnosticError):
        msg = e.diagnostics[0].message
    else:
        msg = f"{type(e).__name__}: {e}"
    return msg.split("; --lower-relay-to-te handles")[0]
