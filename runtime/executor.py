"""Run a lowered module: relay ``main`` calling compiled tir kernels.

    from tvmd.runtime.executor import Executor
    ex = Executor(module_op)            # or IR text; target="llvm" by default
    y = ex.run(x, w)                    # numpy in, numpy out (a tuple if several)

A lowered module holds a ``relay.func @main`` whose body calls kernels::

    %r = call @fused_add_relu(%a, %b) : tensor<1024xf32>

``Executor`` compiles every tir.func of the module once (one LLVM module, one
JIT), then interprets ``main`` op by op:

* ``call`` of a tir.func: allocate its output buffers (64-byte aligned,
  from the kernel's output memref types), call the kernel with the inputs
  (made contiguous and aligned if they are not) and the outputs; the call's
  value is the output (a tuple when there are several);
* ``call`` of a relay.func: run it the same way, recursively;
* ``constant``: its array, bound once per Executor;
* any other relay op (not fused/lowered): its ``compute()`` numpy reference.

:class:`RelayEvaluator` is that interpretation with the kernel call as a
hook; with the tir interpreter as the hook it is a reference for modules
whose kernels are not compiled (``tvm-run --reference`` falls back to it).
"""

from __future__ import annotations

import numpy as np

from ..dialects.relay.ops import control as relay_control
from ..dialects.relay.ops import function as relay
from ..dialects.tir import ops as tir
from ..ir import types as T
from ..ir.attributes import check_constant_size
from .ndarray import as_kernel_input, copy_into, empty_aligned


class ExecutionError(Exception):
    pass


def _check_input(v, arr, label):
    return _check_array(v.type, arr, label)


def _check_array(t, arr, label):
    """`arr` as a numpy array (a DLPack producer viewed) of tensor type `t`'s
    dtype and shape, else an ExecutionError naming `label`; anything else
    for a type that is not a tensor."""
    if isinstance(t, T.TensorType):
        if not isinstance(arr, np.ndarray):
            # a DLPack producer (torch, cupy's host arrays, ...) is viewed, not copied
            arr = np.from_dlpack(arr) if hasattr(arr, "__dlpack__") else np.asarray(arr)
        want = T.storage_numpy_dtype(t.element_type)   # bf16: its bits, uint16
        if arr.dtype != want:
            raise ExecutionError(f"{label} has dtype {arr.dtype}, expected {want} ({t}"
                                 f"{': bf16 bits' if str(t.element_type) == 'bf16' else ''})")
        if arr.ndim != t.rank or any(d is not None and d != s for d, s in zip(t.shape, arr.shape)):
            raise ExecutionError(f"{label} has shape {list(arr.shape)}, expected {t}")
    return arr


def check_out(func, out, inputs):
    """`out` (an array or a sequence of them) checked against `func`'s
    result types: one writeable C-contiguous array of the right dtype and
    shape per result, sharing memory with no input (kernels assume their
    buffers do not alias).  Returns the list."""
    if isinstance(out, np.ndarray) or hasattr(out, "__dlpack__"):
        out = [out]
    out = list(out)
    types = list(func.function_type.results)
    if len(out) != len(types):
        raise ExecutionError(f"out= has {len(out)} array(s); @{func.sym_name} has {len(types)} result(s)")
    checked = []
    for i, (a, t) in enumerate(zip(out, types)):
        label = f"out[{i}]"
        if not isinstance(t, T.TensorType) or not (isinstance(a, np.ndarray) or hasattr(a, "__dlpack__")):
            raise ExecutionError(f"{label}: out= takes arrays for tensor results; result {i} is {t}")
        a = _check_array(t, a, label)
        if not (a.flags.c_contiguous and a.flags.aligned and a.flags.writeable):
            raise ExecutionError(f"{label} must be a writeable C-contiguous array")
        for j, x in enumerate(inputs):
            if isinstance(x, np.ndarray) and a.size and x.size and np.may_share_memory(a, x):
                raise ExecutionError(f"{label} shares memory with input {j}")
        checked.append(a)
    return checked


class RelayEvaluator:
    """Interprets relay functions; `call_kernel(func_op, args)` runs a
    lower-level kernel (tir.func) and returns its output(s)."""

    def __init__(self, module, call_kernel):
        self.module = module
        self.call_kernel = call_kernel
        self._constants: dict = {}

    def lookup(self, name):
        f = self.module.lookup(name)
        if f is None:
            raise ExecutionError(f"no function @{name} in the module")
        return f

    def run_function(self, name_or_op, *args):
        f = self.lookup(name_or_op) if isinstance(name_or_op, str) else name_or_op
        if not isinstance(f, relay.FuncOp):
            raise ExecutionError(f"@{f.sym_name} is a {f.name}, not a relay.func")
        params = f.body.args
        if len(args) != len(params):
            raise ExecutionError(f"@{f.sym_name} takes {len(params)} input(s), got {len(args)}")
        env = {}
        for i, (p, a) in enumerate(zip(params, args)):
            env[p] = _check_input(p, a, f"input {i} (%{p.name or i}) of @{f.sym_name}")
        for op in f.body.ops:
            if isinstance(op, relay.ReturnOp):
                return [env[v] for v in op.operands]
            env[op.results[0]] = self.evaluate(op, [env[v] for v in op.operands])
        raise ExecutionError(f"@{f.sym_name} has no return")

    def evaluate(self, op, args):
        if isinstance(op, relay.ConstantOp):
            a = self._constants.get(op)
            if a is None:
                # kernels take it materialised: past the limit, an error at the op
                check_constant_size(op.results[0].type, op.loc, f"binding '{op.name}'")
                a = self._constants[op] = T.as_storage(op.compute())
            return a
        if isinstance(op, relay.CallOp):
            callee = self.lookup(op.attributes["callee"].name)
            if isinstance(callee, relay.FuncOp):
                outs = self.run_function(callee, *args)
                return outs[0] if len(outs) == 1 else tuple(outs)
            if isinstance(callee, tir.FuncOp):
                return self.call_kernel(callee, args)
            raise ExecutionError(f"@{callee.sym_name} is a {callee.name}: the module is not fully lowered "
                                 f"(run tvm-opt --lower-te-to-tir first)")
        if isinstance(op, relay_control.TupleOp):
            return tuple(args)
        if isinstance(op, relay_control.TupleGetItemOp):
            return args[0][op.attributes["index"]]
        if getattr(op, "compute", None) is None:
            raise ExecutionError(f"cannot evaluate '{op.name}'")
        # the relay interpreter's evaluation: compute(), then the value made
        # to conform to the declared type (dtype, 0-d results)
        from ..dialects.relay.interpreter import evaluate_op
        return T.as_storage(evaluate_op(op, [T.as_values(a, v.type) for a, v in zip(args, op.operands)]))


def allocate_outputs(func_op):
    """Aligned arrays for a tir.func's output buffers."""
    outs = []
    for b in func_op.outputs:
        t = b.type
        if not t.is_static:
            raise ExecutionError(f"@{func_op.sym_name}: cannot allocate an output of dynamic type {t}")
        outs.append(empty_aligned(t.shape, T.storage_numpy_dtype(t.element_type)))
    return outs


def _kernel_args(func_op, args):
    if any(not isinstance(a.type, T.MemRefType) for a in func_op.args):
        raise ExecutionError(f"@{func_op.sym_name} takes scalar arguments; a relay call passes only tensors")
    return [as_kernel_input(a) for a in args]


def interpret_kernel(func_op, args):
    """Run a tir.func through the tir interpreter (the reference path)."""
    from ..dialects.tir.interpreter import run
    outs = allocate_outputs(func_op)
    run(func_op, *_kernel_args(func_op, args), *outs)
    return outs[0] if len(outs) == 1 else tuple(outs)


class EntrySignature:
    """The entry function's parameters, for anything with an ``entry_op``."""

    @property
    def input_names(self):
        return [a.name or f"arg{i}" for i, a in enumerate(self.entry_op.body.args)]

    @property
    def input_types(self):
        return [a.type for a in self.entry_op.body.args]


class Executor(EntrySignature):
    """Compile a lowered module once, then run its entry function.

    A straight-line entry function (the usual case: constants, kernel calls,
    calls of interpreted relay functions, tuples, leftover relay ops) runs
    from a precomputed step list with its intermediate buffers statically
    planned (memory_plan.py): the blocks are allocated once here, parameters
    (constants) are bound once, and only the returned outputs are allocated
    per run, so the caller owns what it gets.  Any other entry function
    (control flow, closures) runs through :class:`RelayEvaluator`.

    An executor is not reentrant: its planned buffers are shared by runs.
    """

    def __init__(self, module, target="llvm", entry: str = "main", opt_level: int = 3, lib=None):
        self.opt_level = opt_level
        if isinstance(module, str):
            from ..parser import parse_module
            module = parse_module(module)
        from ..backend.spec import as_target
        self.module = module
        self.target = as_target(target)
        self.entry = entry
        self.lib = lib
        funcs = [op for op in module.body.ops if isinstance(op, tir.FuncOp)]
        if funcs and lib is None:
            if self.target.kind == "llvm":
                from ..backend.llvm import jit
                self.lib = jit.compile(module, self.target, opt_level)
            else:
                from ..backend.cuda.runner import build
                self.lib = build(module, self.target)
        self.evaluator = RelayEvaluator(module, self._call_kernel)
        f = module.lookup(entry)
        if not isinstance(f, relay.FuncOp):
            raise ExecutionError(f"the module has no relay.func @{entry} to run")
        self.entry_op = f
        self.program = None
        if self.target.kind == "llvm":
            from .program import Program, straight_line
            if straight_line(module, f):
                self.program = Program(module, f, self.lib, self.evaluator)

    @property
    def memory_plan(self):
        """The static plan (memory_plan.Plan), None when the entry is not planned."""
        return self.program.plan if self.program is not None else None

    def _call_kernel(self, func_op, args):
        kernel = self.lib[func_op.sym_name]
        outs = allocate_outputs(func_op)
        kernel(*_kernel_args(func_op, args), *outs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run_list(self, *inputs, profile=None, out=None):
        """The entry function's results as a list; `profile` (a
        program.Profile) collects per-kernel times; `out`: arrays the
        caller owns, one per result, which the results are written into
        (and returned)."""
        if self.program is not None:
            params = self.entry_op.body.args
            if len(inputs) != len(params):
                raise ExecutionError(f"@{self.entry} takes {len(params)} input(s), got {len(inputs)}")
            arrays = [_check_input(p, a, f"input {i} (%{p.name or i}) of @{self.entry}")
                      for i, (p, a) in enumerate(zip(params, inputs))]
            if out is not None:
                out = check_out(self.entry_op, out, arrays)
            return self.program.run(arrays, profile, out)
        outs = self.evaluator.run_function(self.entry_op, *inputs)
        return outs if out is None else copy_into(check_out(self.entry_op, out, inputs), outs)

    def run(self, *inputs, out=None):
        outs = self.run_list(*inputs, out=out)
        return outs[0] if len(outs) == 1 else tuple(outs)

    __call__ = run

    def kernel(self, name):
        """A compiled kernel by name, to call directly."""
        return self.lib[name]


def reference_run(module, name, *inputs):
    """Run relay function `name` with numpy semantics; returns a list of
    outputs.  A pure relay module goes through the relay interpreter
    (``tvmd.dialects.relay.interpreter``) when it is there; a module with tir
    kernels, or any module without that interpreter, through
    :class:`RelayEvaluator` with the kernels run by the tir interpreter."""
    has_kernels = any(isinstance(op, tir.FuncOp) for op in module.body.ops)
    run_function = None
    if not has_kernels:
        try:
            from ..dialects.relay.interpreter import run_function
        except ImportError:
            run_function = None
    if run_function is not None:
        outs = run_function(module, name, *inputs)
        return list(outs) if isinstance(outs, tuple) else [outs]
    return RelayEvaluator(module, interpret_kernel).run_function(name, *inputs)
