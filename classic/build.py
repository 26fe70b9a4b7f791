"""``tvm.lower`` and ``tvm.build`` over a classic schedule.

    mod = tvm.lower(s, [A, B, C], name="main")    # IRModule; str(mod) is the tir text
    f = tvm.build(s, [A, B, C], target="llvm")     # Module; f(a, b, c) writes c in place

What runs:

* ``lower``: the schedule emits ``te.func @name`` (``s.emit``), then the
  passes ``apply-schedule, lower-te-to-tir, tir-simplify`` (as
  ``tvm-opt --apply-schedule --lower-te-to-tir --tir-simplify``).
* ``build``: ``lower``, then ``lower-tir{target=...}`` (the whole tir
  pipeline: loop partition, vectorize, unroll, storage rewrite, intrinsic
  lowering); llvm: ``backend.llvm.jit.compile``; cuda:
  ``backend.cuda.codegen.generate`` for the source (``get_source()``), and
  the kernels are compiled and loaded through pycuda on the first call.

The tir.func takes the placeholders then the outputs (in the order of
`args`); the module's functions take the arguments in the user's order,
NDArrays or numpy arrays, and write the outputs in place.  A schedule the
te dialect rejects raises :class:`TVMError` with the diagnostic, located at
the Python line that applied the primitive.
"""

from __future__ import annotations

import time

from .expr import TVMError
from .target import as_target


def _run(module, pipeline):
    from ..ir.diagnostics import DiagnosticError
    from ..ir.pass_manager import PassFailure, PassManager, instantiate, parse_pipeline
    from ..ir.registry import get_pass_class
    try:
        PassManager(instantiate(parse_pipeline(pipeline), get_pass_class)).run(module)
    except PassFailure as f:
        e = f.exc
        if isinstance(e, DiagnosticError):
            raise TVMError(_render(e)) from None
        raise
    except DiagnosticError as e:
        raise TVMError(_render(e)) from None


def _render(err):
    """The diagnostics, each with the Python source line it points at."""
    import linecache

    from ..ir.diagnostics import SourceManager, render
    sm = SourceManager()
    for d in err.diagnostics:
        for x in [d] + list(d.notes):
            flc = x.loc.file_line_col() if x.loc is not None else None
            if flc:
                lines = linecache.getlines(flc[0])
                if lines:
                    sm.add(flc[0], "".join(lines))
    return "\n".join(render(d, sm) for d in err.diagnostics)


class IRModule:
    """What ``tvm.lower`` returns: ``str(mod)`` is the module text (tir),
    ``mod["main"]`` the tir.func op, ``mod.module`` the ``builtin.module``."""

    def __init__(self, module=None, perm=None, entry=None):
        from ..dialects.builtin.ops import ModuleOp
        if module is None or isinstance(module, dict):   # TVM's IRModule({"main": func})
            functions = module or {}
            module = ModuleOp.create_empty()
            from .relay.expr import Function, emit_function
            for name, f in functions.items():
                if not isinstance(f, Function):
                    raise TVMError(f"IRModule({{'{name}': ...}}) takes relay.Functions, got {type(f).__name__}")
                module.body.append(emit_function(f, name))
            _run(module, "infer-type")
        self.module = module
        self._perm = perm        # user argument i -> position in the tir.func's parameters
        self._entry = entry

    @classmethod
    def from_expr(cls, expr, functions=None, type_defs=None):
        """``tvm.IRModule.from_expr(f)``: `f` (a relay.Function, or an
        expression over free variables) as @main, types inferred."""
        from .relay.expr import Function, free_vars
        if not isinstance(expr, Function):
            expr = Function(free_vars(expr), expr)
        return cls({"main": expr, **(functions or {})})

    def __str__(self):
        from ..ir.printer import print_module
        return print_module(self.module)

    astext = script = __str__

    def __repr__(self):
        return str(self)

    @property
    def functions(self):
        return {op.attributes["sym_name"]: op for op in self.module.body.ops if "sym_name" in op.attributes}

    def __getitem__(self, name):
        f = self.functions.get(name)
        if f is None:
            raise KeyError(f"no function '{name}' (have: {', '.join(self.functions)})")
        return f

    def __contains__(self, name):
        return name in self.functions


def _arg_perm(args):
    from .te import PlaceholderOp
    ins = [i for i, a in enumerate(args) if isinstance(a.op, PlaceholderOp)]
    outs = [i for i, a in enumerate(args) if not isinstance(a.op, PlaceholderOp)]
    perm = [0] * len(args)
    for pos, i in enumerate(ins + outs):
        perm[i] = pos
    return perm


def lower(inp, args=None, name="main", binds=None, simple_mode=False):
    """``tvm.lower(s, [A, B, C], name="main")``: an :class:`IRModule` of the
    tir.func (``simple_mode`` is accepted; the text is the same)."""
    from .schedule import Schedule
    if isinstance(inp, IRModule):
        return inp
    if not isinstance(inp, Schedule):
        raise TVMError(f"lower: expected a te.Schedule, got {type(inp).__name__}")
    if binds:
        raise TVMError("lower: binds= (explicit buffers) is not supported")
    if args is None:
        raise TVMError("lower: pass the argument tensors, e.g. tvm.lower(s, [A, B, C])")
    args = list(args)
    m = inp.emit(args, name)
    _run(m, "apply-schedule,lower-te-to-tir,tir-simplify")
    return IRModule(m, _arg_perm(args), name)


def build(inputs, args=None, target=None, target_host=None, name="default_function", binds=None):
    """``tvm.build(s, [A, B, C], target="llvm")``: a callable :class:`Module`
    (``target="cuda"``: a module whose ``get_source()`` is the CUDA C)."""
    if isinstance(inputs, IRModule):
        mod = inputs
        name = mod._entry or name
    else:
        mod = lower(inputs, args, name=name, binds=binds)
    tgt = as_target(target)
    m = mod.module.clone()
    kind = tgt.spec.kind
    _run(m, f"lower-tir{{target={kind}}}")
    if kind == "llvm":
        from ..backend.llvm import jit
        try:
            lib = jit.compile(m, tgt.spec)
        except ValueError as e:
            raise TVMError(f"build: {e}") from None
        return Module(lib, name, mod._perm, tgt)
    from ..backend.cuda.codegen import generate
    from ..ir.diagnostics import DiagnosticError
    try:
        source, _ = generate(m, tgt.spec)
    except DiagnosticError as e:
        raise TVMError(_render(e)) from None
    return CUDAHostModule(m, source, name, mod._perm, tgt)


class Function:
    """A compiled function taking the user's arguments (NDArrays or numpy
    arrays, in the order of `args`)."""

    def __init__(self, kernel, perm, name):
        self.kernel = kernel
        self.perm = perm
        self.name = name

    def __call__(self, *args):
        import numpy as np

        from .nd import NDArray
        if self.perm is not None and len(args) != len(self.perm):
            raise TVMError(f"{self.name} takes {len(self.perm)} argument(s), got {len(args)}")
        arrays = [a._data if isinstance(a, NDArray) else a for a in args]
        for i, a in enumerate(arrays):
            if isinstance(a, np.ndarray) and not a.flags.writeable:
                raise TVMError(f"argument {i} of {self.name} is a read-only array")
        if self.perm is not None:
            ordered = [None] * len(arrays)
            for i, a in enumerate(arrays):
                ordered[self.perm[i]] = a
            arrays = ordered
        try:
            self.kernel(*arrays)
        except (TypeError, ValueError) as e:
            raise TVMError(f"{self.name}: {e}") from None


class ProfileResult:
    def __init__(self, results):
        self.results = tuple(results)
        self.mean = sum(results) / len(results)
        s = sorted(results)
        self.median = s[len(s) // 2]
        self.min, self.max = s[0], s[-1]
        self.std = (sum((x - self.mean) ** 2 for x in results) / len(results)) ** 0.5

    def __repr__(self):
        return f"ProfileResult(mean={self.mean:.6g}s, results={list(self.results)})"


class Module:
    """A built llvm module: ``mod(*args)`` calls the entry function;
    ``mod[name]`` / ``mod.get_function(name)`` a function by name."""

    type_key = "llvm"

    def __init__(self, lib, entry, perm, target):
        self.lib = lib
        self.entry_name = entry
        self._perm = perm
        self.target = target
        self.imported_modules = []

    def get_function(self, name, query_imports=False):
        if name not in self.lib:
            raise AttributeError(f"module has no function '{name}' (have: {', '.join(self.lib.kernels)})")
        return Function(self.lib[name], self._perm if name == self.entry_name else None, name)

    __getitem__ = get_function

    def __call__(self, *args):
        return self.get_function(self.entry_name)(*args)

    def get_source(self, fmt="ll"):
        """The optimised LLVM IR (``fmt`` "ll"); ``"asm"``: the assembly."""
        if fmt in ("asm", "s"):
            raise TVMError("get_source('asm'): use tvm-translate --emit=asm on the lowered text")
        return self.lib.llvm_ir

    def time_evaluator(self, func_name, dev=None, number=10, repeat=1, min_repeat_ms=0, **kwargs):
        """Seconds per call: ``mod.time_evaluator(mod.entry_name, dev, number=10)(a, b, c).mean``."""
        f = self.get_function(func_name)

        def run(*args):
            f(*args)   # warm up
            res = []
            for _ in range(repeat):
                n = number
                while True:
                    t0 = time.perf_counter()
                    for _ in range(n):
                        f(*args)
                    dt = time.perf_counter() - t0
                    if dt * 1000 >= min_repeat_ms or n >= 1 << 20:
                        break
                    n *= 2
                res.append(dt / n)
            return ProfileResult(res)
        return run

    def export_library(self, path, *args, **kwargs):
        raise TVMError("export_library is not supported here; use tvm-translate --emit=obj (or "
                       "backend.llvm.jit.save_object) on the lowered module")


class CUDASourceModule:
    """The device part: ``get_source()`` is the CUDA C."""

    type_key = "cuda"

    def __init__(self, source):
        self.source = source

    def get_source(self, fmt="cu"):
        return self.source


class CUDAHostModule(Module):
    """A built cuda module: ``imported_modules[0].get_source()`` (and
    ``get_source()``) give the CUDA C; calling compiles and loads the
    kernels through pycuda (a GPU and pycuda are needed then)."""

    def __init__(self, module_op, source, entry, perm, target):
        self.module_op = module_op
        self.source = source
        self.entry_name = entry
        self._perm = perm
        self.target = target
        self.imported_modules = [CUDASourceModule(source)]
        self._lib = None

    @property
    def lib(self):
        if self._lib is None:
            from ..backend.cuda.runner import build as cuda_build
            try:
                self._lib = _CudaLib(cuda_build(self.module_op, self.target.spec))
            except Exception as e:   # noqa: BLE001 (no pycuda, no GPU, no compiler)
                raise TVMError(f"cannot run the CUDA module here: {e}") from None
        return self._lib

    def get_source(self, fmt="cu"):
        return self.source


class _CudaLib:
    def __init__(self, cm):
        self.cm = cm
        self.kernels = {**cm.kernels, **cm.hosts}

    def __contains__(self, name):
        return name in self.kernels

    def __getitem__(self, name):
        return self.cm[name]
