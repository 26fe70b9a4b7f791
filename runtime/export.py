"""A compiled model as a shared library with a C header.

    cm = build(text)
    cm.export_library("model.so")        # writes model.so and model.h
    m = load_library("model.so")         # no compiler needed
    y = m.run(x)

The library holds the kernels, the thread-pool runtime (internal), the
model's entry (runtime/aot.py's, with its pointers as symbols), the
weights, and a zeroed arena for the intermediate buffers (the static
memory plan's blocks).  Its C interface, in the header::

    void NAME_run(const float *x, const float *w, float *out0);

takes the inputs, C-contiguous and row-major, then one buffer per result,
which it fills; it is not reentrant (the arena is static).  The weights are
bytes the assembler includes (``.incbin``: no size blow-up through IR
text), so exporting needs a C compiler (``cc``, or $CC), as TVM's
export_library does; loading does not: ``NAME_manifest``, a JSON string in
the library, describes the entry for :func:`load_library`.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np


class ExportError(Exception):
    pass


def c_name(path) -> str:
    """The C identifier a library's functions are prefixed with: its file
    name without extension, other characters as '_'."""
    base = os.path.basename(os.fspath(path)).split(".")[0]
    name = re.sub(r"\W", "_", base, flags=re.ASCII) or "model"
    return name if not name[0].isdigit() else "m_" + name


_C_TYPES = {"float32": "float", "float64": "double", "float16": "uint16_t", "bfloat16": "uint16_t",
            "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
            "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
            "bool": "uint8_t"}


def export_library(cm, path, cc=None):
    """Write `path` (a shared object) and the header beside it (same name,
    ``.h``).  Returns the header's path."""
    from ..backend.llvm.target import LLVM_LOCK
    with LLVM_LOCK:   # the kernels' module and the entry live in LLVM's global context
        return _export_library(cm, path, cc)


def _export_library(cm, path, cc):
    from llvmlite import ir

    from ..backend.llvm import jit
    from ..backend.names import llvm_symbols
    from ..backend.spec import as_target
    from .aot import NotCompilable, entry_ir, plan_entry, quote
    prog = cm.executor.program if cm.executor is not None else None
    if prog is None:
        raise ExportError(f"the model runs in the relay interpreter ({cm.reason}): nothing to export")
    try:
        plan = plan_entry(prog)
    except NotCompilable as e:
        raise ExportError(f"the model cannot be one native function: {e}") from None
    cc = cc or os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise ExportError("exporting a shared library needs a C compiler to link it: none found (set CC)")
    name = c_name(path)
    target = as_target(cm.executor.target)
    llmod, sigs, tm = jit.lower(cm.module, target, cm.executor.opt_level, manifest=False, jit=False)
    kernel_syms = dict(zip([s.name for s in sigs], llvm_symbols([s.name for s in sigs])))
    # every pointer the entry holds: a constant or the start of a block
    symbol_of, weights = {}, []
    for k, a in enumerate(prog.template):
        if isinstance(a, np.ndarray):
            symbol_of[a.ctypes.data] = f"__tvmd_{name}_const{k}"
            weights.append((f"__tvmd_{name}_const{k}", a))
    globals_ = []
    for i, blk in enumerate(prog.blocks):
        sym = f"__tvmd_{name}_block{i}"
        symbol_of.setdefault(blk.ctypes.data, sym)
        globals_.append(f"{quote(sym)} = internal global [{blk.nbytes} x i8] zeroinitializer, align 64")
    for sym, a in weights:
        globals_.append(f"{quote(sym)} = external hidden global [{max(a.nbytes, 1)} x i8], align 64")

    def address(w):
        sym = symbol_of.get(w[1])
        if sym is None:
            raise ExportError("a buffer of the entry is neither a constant nor a planned block")
        return quote(sym)
    manifest = bytearray(json.dumps(_manifest(cm, plan, name)).encode() + b"\0")
    data = ir.Constant(ir.ArrayType(ir.IntType(8), len(manifest)), manifest)
    globals_.append(f"@{name}_manifest = constant {data}, align 1")
    text = "\n".join(globals_) + "\n" + entry_ir(plan, f"{name}_run", kernel_syms.__getitem__, address)
    import llvmlite.binding as llvm
    entry = llvm.parse_assembly(text)
    entry.triple, entry.data_layout = llmod.triple, llmod.data_layout
    llmod.link_in(entry)
    # only NAME_run and NAME_manifest are exported: a program that links two
    # models would otherwise have one's kernels interpose on the other's
    for sym in kernel_syms.values():
        llmod.get_function(sym).linkage = "internal"
    llmod.verify()
    obj = tm.emit_object(llmod)
    header = os.path.splitext(os.fspath(path))[0] + ".h"
    with tempfile.TemporaryDirectory(prefix="tvmd-export-") as tmp:
        with open(os.path.join(tmp, "kernels.o"), "wb") as f:
            f.write(obj)
        asm = [".section .rodata.tvmd_weights,\"a\""]
        for sym, a in weights:
            fn = os.path.join(tmp, f"{sym}.bin")
            with open(fn, "wb") as f:
                f.write(a.tobytes() if a.nbytes else b"\0")
            asm += [".balign 64", f".globl {sym}", f".hidden {sym}", f"{sym}:", f'.incbin "{fn}"']
        asm.append('.section .note.GNU-stack,"",@progbits')
        with open(os.path.join(tmp, "weights.s"), "w") as f:
            f.write("\n".join(asm) + "\n")
        out_tmp = os.path.join(tmp, "model.so")
        cmd = [cc, "-shared", "-o", out_tmp, os.path.join(tmp, "kernels.o"), os.path.join(tmp, "weights.s"),
               "-lpthread"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise ExportError(f"linking the library failed ({' '.join(cmd)}):\n{r.stderr.strip()}")
        from ..ir.files import write_atomic, write_atomic_bytes
        with open(out_tmp, "rb") as f:
            write_atomic_bytes(os.fspath(path), f.read())
        write_atomic(header, _header(cm, plan, name))
    return header


def _io(cm, plan):
    entry = cm.module.lookup(cm.entry)
    ins = []
    for i, a in enumerate(entry.body.args):
        t = a.type
        ins.append({"name": a.name or f"in{i}", "shape": list(t.shape), "dtype": np.dtype(t.dtype).name})
    outs = [{"name": f"out{j}", "shape": list(shape), "dtype": np.dtype(dt).name}
            for j, (shape, dt) in enumerate(plan.results)]
    return ins, outs


def _manifest(cm, plan, name):
    ins, outs = _io(cm, plan)
    return {"format": "tvmd-model-1", "name": name, "entry": f"{name}_run", "inputs": ins, "outputs": outs}


def _header(cm, plan, name):
    ins, outs = _io(cm, plan)
    guard = f"TVMD_{name.upper()}_H"

    def dims(d):
        return "".join(f"[{n}]" for n in d["shape"]) or " (a scalar)"
    params = [f"const {_C_TYPES[d['dtype']]} *{_c_param(d['name'], i)}" for i, d in enumerate(ins)]
    params += [f"{_C_TYPES[d['dtype']]} *{d['name']}" for d in outs]
    lines = [f"/* {name}: a model compiled by tvmd.", " *"]
    lines.append(" * Inputs, C-contiguous and row-major:")
    lines += [f" *   {_c_param(d['name'], i)}: {d['dtype']}{dims(d)}" for i, d in enumerate(ins)]
    lines.append(" * Results, written into buffers the caller owns:")
    lines += [f" *   {d['name']}: {d['dtype']}{dims(d)}" for d in outs]
    lines += [" *", " * Not reentrant: the intermediate buffers are static; call it from one",
              " * thread at a time.  Uses TVMD_NUM_THREADS threads (default: all cores). */", ""]
    lines += [f"#ifndef {guard}", f"#define {guard}", "", "#include <stdint.h>", "",
              "#ifdef __cplusplus", 'extern "C" {', "#endif", "",
              f"void {name}_run({', '.join(params)});", "",
              "#ifdef __cplusplus", "}", "#endif", "", f"#endif  /* {guard} */", ""]
    return "\n".join(lines)


def _c_param(n, i):
    s = re.sub(r"\W", "_", n, flags=re.ASCII)
    return s if s and not s[0].isdigit() and not s.startswith("out") else f"in{i}_{s}"


class LoadedModel:
    """A library from :func:`export_library`, loaded with ctypes."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.lib = ctypes.CDLL(os.path.abspath(self.path))
        name = c_name(path)
        try:
            text = ctypes.c_char_p.in_dll(self.lib, f"{name}_manifest")
        except ValueError:
            raise ExportError(f"{self.path} has no {name}_manifest: not a library tvmd exported as "
                              f"'{os.path.basename(self.path)}'") from None
        m = json.loads(ctypes.string_at(ctypes.addressof(text)).decode())
        self.inputs, self.outputs = m["inputs"], m["outputs"]
        fn = getattr(self.lib, m["entry"])
        fn.restype = None
        fn.argtypes = [ctypes.c_void_p] * (len(self.inputs) + len(self.outputs))
        self._fn = fn

    def run(self, *inputs, out=None):
        if len(inputs) != len(self.inputs):
            raise TypeError(f"the model takes {len(self.inputs)} input(s), got {len(inputs)}")
        arrays = []
        for i, (a, d) in enumerate(zip(inputs, self.inputs)):
            a = np.ascontiguousarray(a)
            if a.dtype != np.dtype(d["dtype"]) or list(a.shape) != d["shape"]:
                raise ValueError(f"input {i} ({d['name']}) is {a.dtype}{list(a.shape)}, "
                                 f"expected {d['dtype']}{d['shape']}")
            arrays.append(a)
        if out is None:
            outs = [np.empty(d["shape"], d["dtype"]) for d in self.outputs]
        else:
            outs = [out] if isinstance(out, np.ndarray) else list(out)
            for j, (o, d) in enumerate(zip(outs, self.outputs)):
                if o.dtype != np.dtype(d["dtype"]) or list(o.shape) != d["shape"] or not o.flags.c_contiguous:
                    raise ValueError(f"out[{j}] must be a C-contiguous {d['dtype']}{d['shape']} array")
        self._fn(*[a.ctypes.data for a in arrays], *[o.ctypes.data for o in outs])
        return outs[0] if len(outs) == 1 else tuple(outs)


def load_library(path) -> LoadedModel:
    return LoadedModel(path)
