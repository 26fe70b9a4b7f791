"""Compile tir to machine code: optimise, JIT, emit text/assembly/objects.

    from tvmd.backend.llvm import jit
    lib = jit.compile(module_op, "llvm")      # every tir.func in the module
    lib["add_relu"](A, B, C)                  # numpy arrays, checked; C in place
    text = jit.emit_llvm(module_op)           # LLVM IR text (verified)
    asm = jit.emit_assembly(module_op, "llvm -mcpu=znver3")
    obj = jit.emit_object(module_op)          # ELF bytes, self-describing
    lib2 = jit.load_object(obj)               # no recompilation: MCJIT loads it

The pipeline: codegen (:mod:`.codegen`) → ``llvm.parse_assembly`` and
verify → LLVM's new pass manager at O3 (``create_pass_builder`` with
PipelineTuningOptions: loop and SLP vectorisation, unrolling) for the target
machine → MCJIT.  Kernels are ctypes functions (ctypes drops the GIL during
the call) wrapped in :class:`Kernel`, which checks dtype, shape and
contiguity, passes the caller's arrays as they are (only one whose
elements are misaligned for their type is copied, and back), and
rejects overlapping buffers (the code assumes ``noalias``).
"""

from __future__ import annotations

import ctypes

from .. import abi
from ..names import comment_text, llvm_symbols
from ..spec import as_target
from . import parallel
from .codegen import generate, tir_funcs
from .target import LLVM_LOCK, init_llvm, llvm_serialized

_CTYPES = {
    "int64": ctypes.c_int64, "int32": ctypes.c_int32, "int16": ctypes.c_int16, "int8": ctypes.c_int8,
    "uint64": ctypes.c_uint64, "uint32": ctypes.c_uint32, "uint16": ctypes.c_uint16, "uint8": ctypes.c_uint8,
    "bool": ctypes.c_bool, "float32": ctypes.c_float, "float64": ctypes.c_double,
}


class CompileError(Exception):
    """LLVM rejected the generated IR: a bug in the codegen, not in the input."""


def _llvm_target(target):
    t = as_target(target, "llvm")
    if t.kind != "llvm":
        raise ValueError(f"target '{t}' is not an LLVM target")
    return t


@llvm_serialized
def optimize(llmod, tm, opt_level: int = 3):
    """Run LLVM's standard -O<n> pipeline on a binding ModuleRef in place."""
    llvm = init_llvm()
    if opt_level <= 0:
        return
    pto = llvm.create_pipeline_tuning_options(speed_level=min(opt_level, 3))
    pto.loop_vectorization = opt_level >= 2
    pto.slp_vectorization = opt_level >= 2
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(llmod, pb)


@llvm_serialized
def lower(module_op, target=None, opt_level: int = 3, manifest: bool = False, jit: bool = False):
    """(binding ModuleRef, [abi.Signature], TargetMachine) for the module's tir.funcs."""
    t = _llvm_target(target)
    llvm = init_llvm(native_only=t.triple is None)
    tm = t.target_machine(opt_level, jit=jit)
    funcs = tir_funcs(module_op)
    irmod, sigs = generate(funcs, triple=tm.triple, data_layout=str(tm.target_data), manifest=manifest,
                           dot_lanes=t.vector_unit().dot_lanes)
    text = str(irmod)
    try:
        llmod = llvm.parse_assembly(text)
        llmod.verify()
    except RuntimeError as e:
        raise CompileError(f"generated LLVM IR does not verify: {e}\n{text}") from None
    if parallel.needs_runtime(llmod):
        if jit:
            # one shared pool, resolved by symbol; its engine owns its own machine
            parallel.process_runtime(lambda: t.target_machine(3, jit=True))
        else:
            parallel.link_runtime(llmod, tm.triple)   # self-contained object / text
    optimize(llmod, tm, opt_level)
    return llmod, sigs, tm


@llvm_serialized
def emit_llvm(module_op, target=None, opt_level: int = 0) -> str:
    """LLVM IR text; as generated at O0 (readable), optimised above."""
    llmod, _, _ = lower(module_op, target, opt_level)
    return str(llmod)


@llvm_serialized
def emit_assembly(module_op, target=None, opt_level: int = 3) -> str:
    llmod, _, tm = lower(module_op, target, opt_level)
    return tm.emit_assembly(llmod)


@llvm_serialized
def emit_object(module_op, target=None, opt_level: int = 3) -> bytes:
    """A relocatable object (ELF on Linux) with the kernels and the
    ``__tvmd_manifest`` JSON that :func:`load_object` reads back."""
    llmod, _, tm = lower(module_op, target, opt_level, manifest=True)
    return tm.emit_object(llmod)


def save_object(module_op, path, target=None, opt_level: int = 3):
    from ...ir.files import write_atomic_bytes
    write_atomic_bytes(path, emit_object(module_op, target, opt_level))


class CompiledModule:
    """The JIT'd kernels of one module, by name (``lib["f"]``, ``lib.f``)."""

    def __init__(self, engine, sigs, llvm_module=None, target=None):
        self.engine = engine
        self.llvm_module = llvm_module   # the optimised module (None when loaded from an object)
        self.target = target
        self.kernels = {}
        # the functions' LLVM symbols, as codegen made them (backend.names)
        for s, symbol in zip(sigs, llvm_symbols([s.name for s in sigs])):
            addr = engine.get_function_address(symbol)
            if not addr:
                raise CompileError(f"function '{comment_text(s.name)}' is missing from the compiled code")
            self.kernels[s.name] = Kernel(s, addr, self)

    def __getitem__(self, name):
        try:
            return self.kernels[name]
        except KeyError:
            raise KeyError(f"no kernel '{name}' (have: {', '.join(self.kernels) or 'none'})") from None

    def __getattr__(self, name):
        if name.startswith("_") or name in ("engine", "kernels", "llvm_module", "target"):
            raise AttributeError(name)
        try:
            return self.kernels[name]
        except KeyError:
            raise AttributeError(name) from None

    def __contains__(self, name):
        return name in self.kernels

    @property
    def llvm_ir(self) -> str:
        if self.llvm_module is None:
            return ""
        with LLVM_LOCK:
            return str(self.llvm_module)


@llvm_serialized
def _engine(llmod, t, opt_level):
    llvm = init_llvm()
    tm = t.target_machine(opt_level, jit=True)
    return llvm.create_mcjit_compiler(llmod, tm)


@llvm_serialized
def engine_for_ir(text, target_machine):
    """An MCJIT engine holding LLVM IR `text` (verified, compiled, its
    symbols resolved) for `target_machine`: small hand-written modules
    such as the thread-pool runtime and a model's entry."""
    llvm = init_llvm()
    mod = llvm.parse_assembly(text)
    mod.triple = target_machine.triple
    mod.data_layout = str(target_machine.target_data)
    mod.verify()
    engine = llvm.create_mcjit_compiler(mod, target_machine)
    engine.finalize_object()
    return engine


@llvm_serialized
def compile(module_op, target=None, opt_level: int = 3) -> CompiledModule:
    """JIT every tir.func of `module_op` (or one tir.func) for `target` (the host by default)."""
    t = _llvm_target(target)
    if not t.is_host:
        raise ValueError(f"cannot run code for '{t}' on this machine; use emit_object instead")
    llmod, sigs, _ = lower(module_op, t, opt_level, jit=True)
    ee = _engine(llmod, t, opt_level)
    ee.finalize_object()
    return CompiledModule(ee, sigs, llmod, t)


_pinned = []


@llvm_serialized
def load_object(obj, target=None) -> CompiledModule:
    """Load an object file from :func:`emit_object` (bytes or a path) into a
    fresh JIT, without recompiling; its manifest gives the signatures."""
    llvm = init_llvm()
    t = _llvm_target(target)
    if not isinstance(obj, (bytes, bytearray)):
        with open(obj, "rb") as f:
            obj = f.read()
    ee = _engine(llvm.parse_assembly(""), t, 3)
    ee.add_object_file(llvm.ObjectFileRef.from_data(obj))
    ee.finalize_object()
    # The object carries its own thread pool, whose idle threads live on in
    # its code: the engine must never be freed.
    _pinned.append(ee)
    addr = ee.get_global_value_address("__tvmd_manifest")
    if not addr:
        raise ValueError("the object file has no __tvmd_manifest: it was not made by tvmd")
    sigs = abi.parse_manifest(ctypes.string_at(addr).decode())
    return CompiledModule(ee, sigs, None, t)


class Kernel:
    """A compiled tir.func, called with numpy arrays (buffers) and Python
    numbers (scalars) in declaration order; returns the output array(s)."""

    def __init__(self, sig: abi.Signature, address: int, owner=None):
        self.sig = sig
        self.name = sig.name
        self.address = address
        self._owner = owner   # keeps the JIT'd code alive
        argtypes = []
        self.unsupported = None   # why Python cannot call it (the module still compiles)
        for p in sig.params:
            if p.kind == "buffer":
                argtypes.append(ctypes.c_void_p)
            else:
                ct = _CTYPES.get(p.dtype)
                if ct is None:
                    self.unsupported = (f"@{sig.name}: scalar parameter {p.name} of type {p.type} "
                                        f"cannot be passed from Python (ctypes has no such type)")
                    ct = ctypes.c_void_p
                argtypes.append(ct)
        self.cfunc = ctypes.CFUNCTYPE(None, *argtypes)(address)
        self.cfunc.owner = owner   # a caller that keeps only the raw cfunc keeps the code too

    def __repr__(self):
        return f"<Kernel @{self.name}({', '.join(p.type for p in self.sig.declared)})>"

    def __call__(self, *args):
        import numpy as np

        from ...runtime.ndarray import as_kernel_input, check_buffer, data_ptr
        sig = self.sig
        if self.unsupported:
            raise TypeError(self.unsupported)
        declared = sig.declared
        if len(args) != len(declared):
            raise TypeError(f"@{sig.name} takes {len(declared)} argument(s), got {len(args)}")
        cargs, arrays, copies = [], {}, []
        for i, (p, a) in enumerate(zip(declared, args)):
            label = f"argument {i} ({p.name}) of @{sig.name}"
            if p.kind == "buffer":
                check_buffer(a, p.dtype, p.shape, label)
                buf = as_kernel_input(a)   # no copy but for an array whose elements are misaligned
                if buf is not a:
                    copies.append((a, buf))
                arrays[i] = buf
                cargs.append(data_ptr(buf))
            else:
                if isinstance(a, np.ndarray):
                    if a.ndim != 0:
                        raise TypeError(f"{label} is a scalar ({p.type}), got an array")
                    a = a[()]
                if p.dtype.startswith(("int", "uint")) and not isinstance(a, (int, np.integer)):
                    raise TypeError(f"{label} must be an integer ({p.type}), got {type(a).__name__}")
                cargs.append(a)
        for p in sig.params[len(declared):]:
            cargs.append(arrays[p.buffer].shape[p.axis])
        # An output must not overlap any other buffer (the code assumes noalias);
        # inputs may share memory, as they are only read.  The caller's arrays are
        # checked, before any aligned copy.
        for o in sig.outputs:
            for i in arrays:
                if i != o and args[o].size and args[i].size and np.may_share_memory(args[o], args[i]):
                    raise ValueError(f"@{sig.name}: output buffer {sig.params[o].name} overlaps buffer "
                                     f"{sig.params[i].name} (the kernel assumes buffers do not alias)")
        self.cfunc(*cargs)
        for orig, buf in copies:
            if orig.flags.writeable:
                orig[...] = buf
        outs = [args[i] for i in sig.outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)
