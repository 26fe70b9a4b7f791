"""The entry function compiled to one native call (TVM's AOT executor).

A :class:`~tvmd.runtime.program.Program` whose steps are all compiled
kernels (and the tuples and get_items that route their values) becomes
one LLVM function::

    void entry(const T0 *in0, ..., R0 *out0, ...)     // inputs, then results

that calls the kernels in order and copies in any result that is an input,
a constant or another result.  Every other pointer -- the constants, bound
once, and the intermediate buffers, at the start of the static memory
plan's blocks -- is known when the entry is generated, and is written into
its code by the caller's `address` function: a constant integer for the
JIT (:func:`compile_entry`), a symbol for a shared library
(runtime/export.py).  A run is: check the inputs, allocate the results (or
take the caller's ``out=``), one call.  No Python runs between kernels.

JIT entries reach each kernel through a symbol of their own
(``__tvmd_aot<N>_k<i>``, registered with ``llvm.add_symbol`` at the
kernel's JIT address), so entries of several models in one process never
meet; the entry lives in a small module of its own, JIT-compiled in
milliseconds, and keeps the program (its constants and blocks) alive.

What it cannot do, :class:`NotCompilable` says (the Program then runs its
steps from Python, as it does for ``--profile``): a function left to the
interpreter, a kernel with dynamic shapes or scalar parameters, an
intermediate buffer the plan did not place, a tuple result.
"""

from __future__ import annotations

import ctypes
import itertools
from dataclasses import dataclass

import numpy as np

from ..backend.abi import storage_dtype

_ids = itertools.count()


class NotCompilable(Exception):
    """Why a program's entry cannot be one native function; `reported`:
    the cause has been said already (an interpreted function)."""

    def __init__(self, why, reported=False):
        super().__init__(why)
        self.reported = reported


@dataclass
class EntryPlan:
    """What the entry does.  Operands: ``("arg", i)`` input i, ``("res", j)``
    result j, ``("addr", pointer, array)`` a constant, planned buffer or a
    loop's array.  `body`: instructions, in order --

        ("call", kernel name, [operand, ...])
        ("copy", destination, source, bytes)
        ("copy_step", destination, source, bytes)   to destination + step * bytes
        ("loop", trip count, counter operand, [instruction, ...])

    -- and `copies`, the results copied in at the end."""
    n_inputs: int
    results: list      # per result: (shape, numpy dtype)
    kernels: dict      # kernel name -> number of (pointer) parameters, in first-call order
    body: list
    copies: list       # (result j, source operand, bytes)


def plan_entry(program) -> EntryPlan:
    """The entry of `program` from its static step list (Program.static_steps:
    ("kernel", name, out slot, input slots, fixed output buffers), ("tuple",
    out, ins), ("get", out, src, index), ("loop", out, trip count, (index
    slot, counter), [(carried slot, array)], stacked arrays, init slots, body
    steps, yielded slots), ("other", why, reported)) and its kernels
    (Program.lib).  Raises NotCompilable."""
    returns = program.returns
    _first_cause(program.static_steps)
    where = {i: ("arg", i) for i in range(program.n_inputs)}
    for slot, a in enumerate(program.template):
        if isinstance(a, np.ndarray):
            where[slot] = ("addr", a.ctypes.data, a)
    result_of = {}
    for j, s in enumerate(returns):
        result_of.setdefault(s, j)
    kernels = {}
    body = _lower_steps(program.static_steps, where, result_of, kernels, program.lib)
    copies = []
    for j, s in enumerate(returns):
        spec = program.result_specs[j]
        w = where[s]
        if spec is None or w[0] == "tuple":
            raise NotCompilable("a result is a tuple")
        if w != ("res", j):   # an input, a constant or another result: copied in
            copies.append((j, w, _nbytes(*spec)))
    return EntryPlan(program.n_inputs, list(program.result_specs), kernels, body, copies)


def _first_cause(steps):
    """The first step that is not compiled, before what follows from it."""
    for step in steps:
        if step[0] == "other":
            raise NotCompilable(step[1], step[2])
        if step[0] == "dynamic":   # runtime/aot_dynamic.py compiles those
            raise NotCompilable(f"@{step[1]} has dynamic ('?') dimensions, sized per call")
        if step[0] == "loop":
            _first_cause(step[7])


def _nbytes(shape, dtype):
    return int(np.prod(shape, dtype=np.int64)) * storage_dtype(dtype).itemsize


def _owned(a):
    return ("addr", a.ctypes.data, a)


def _lower_steps(steps, where, result_of, kernels, lib):
    """Instructions for `steps`, filling `where` (slot -> operand) and `kernels`."""
    out_instrs = []
    for step in steps:
        kind = step[0]
        if kind == "tuple":
            _, out, ins = step
            where[out] = ("tuple", [where[i] for i in ins])
        elif kind == "get":
            _, out, src, index = step
            w = where[src]
            if w[0] != "tuple":
                raise NotCompilable("a get_item of a value that is not a tuple of buffers")
            where[out] = w[1][index]
        elif kind == "loop":
            out_instrs += _lower_loop(step, where, result_of, kernels, lib)
        else:
            out_instrs.append(_lower_kernel(step, where, result_of, kernels, lib))
    return out_instrs


def _lower_kernel(step, where, result_of, kernels, lib):
    _, name, out, ins, fixed_out = step
    kernel = lib[name]
    sig = kernel.sig
    if kernel.unsupported or any(p.kind != "buffer" for p in sig.params):
        raise NotCompilable(f"kernel @{name} takes dynamic dimensions or scalars")
    args = [where[i] for i in ins]
    if any(a[0] == "tuple" for a in args):
        raise NotCompilable(f"kernel @{name} takes a tuple")
    if len(sig.params) != len(ins) + len(fixed_out):
        raise NotCompilable(f"kernel @{name} takes {len(sig.params)} buffers, the call passes "
                            f"{len(ins) + len(fixed_out)}")
    for p, a in zip(sig.params, args):
        need = _nbytes(p.shape, p.dtype)
        if a[0] == "addr" and a[2].nbytes < need:
            raise NotCompilable(f"kernel @{name} reads {need} bytes of a {a[2].nbytes}-byte constant")
    outs = []
    for b in fixed_out:
        if b is not None:
            outs.append(("addr", b.ctypes.data, b))
        elif len(fixed_out) == 1 and out in result_of:
            outs.append(("res", result_of[out]))
        elif out in result_of:
            raise NotCompilable(f"a result is a tuple (the outputs of @{name})")
        else:
            raise NotCompilable(f"an output of @{name} has no planned buffer")
    where[out] = outs[0] if len(outs) == 1 else ("tuple", outs)
    kernels.setdefault(name, len(sig.params))
    return ("call", name, args + outs)


def _lower_loop(step, where, result_of, kernels, lib):
    """Copy the initial state in, then the loop: the body's calls, the next
    state copied over the carried arrays (through staging copies where a
    yield is another carried array: a swap), each step's outputs copied
    into their slice of the stacked arrays."""
    _, out, n, (index, counter), carried, stacked, inits, body_steps, yields = step
    instrs = []
    for (_, c), i in zip(carried, inits):
        src = where[i]
        if src[0] == "tuple":
            raise NotCompilable("a loop carries a tuple")
        instrs.append(("copy", _owned(c), src, c.nbytes))
    where[index] = _owned(counter)
    for s, c in carried:
        where[s] = _owned(c)
    body = _lower_steps(body_steps, where, result_of, kernels, lib)
    k = len(carried)
    srcs = [where[s] for s in yields]
    if any(w[0] == "tuple" for w in srcs):
        raise NotCompilable("a loop yields a tuple")
    carry_ptrs = {c.ctypes.data for _, c in carried}
    staged, finals = [], []
    for (_, c), w in zip(carried, srcs[:k]):
        if w[0] == "addr" and w[1] == c.ctypes.data:
            continue                       # carried through unchanged
        if w[0] == "addr" and w[1] in carry_ptrs:
            tmp = np.empty_like(c)
            staged.append(("copy", _owned(tmp), w, c.nbytes))
            w = _owned(tmp)
        finals.append(("copy", _owned(c), w, c.nbytes))
    steps_out = [("copy_step", _owned(a), w, a.nbytes // max(n, 1)) for a, w in zip(stacked, srcs[k:])]
    # every read of this step's values (staging, stacked outputs) before a carry is overwritten
    instrs.append(("loop", n, _owned(counter), body + staged + steps_out + finals))
    where[out] = ("tuple", [_owned(c) for _, c in carried] + [_owned(a) for a in stacked])
    return instrs


def entry_ir(plan: EntryPlan, entry: str, kernel_symbol, address) -> str:
    """LLVM IR text defining ``void @entry(ptr in..., ptr out...)``;
    `kernel_symbol(name)` the symbol a kernel is called by, `address(operand)`
    the IR constant for an ("addr", ...) operand."""
    params = [f"%in{i}" for i in range(plan.n_inputs)] + [f"%out{j}" for j in range(len(plan.results))]
    lines = [f"declare void {quote(kernel_symbol(k))}({', '.join(['ptr'] * n)})" for k, n in plan.kernels.items()]
    lines.append("declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)")
    # results are written, and never share memory with an input or each other
    decl = [f"ptr {p}" for p in params[:plan.n_inputs]] + [f"ptr noalias {p}" for p in params[plan.n_inputs:]]
    lines.append(f"define void {quote(entry)}({', '.join(decl)}) {{")
    lines.append("entry:")
    entry_at = len(lines)   # where the loops' stack slots go: allocated once, not per outer step
    allocas = []
    loops = itertools.count()

    def value(w):
        if w[0] == "arg":
            return f"%in{w[1]}"
        if w[0] == "res":
            return f"%out{w[1]}"
        return address(w)

    def memcpy(dst, src, nbytes):
        lines.append(f"  call void @llvm.memcpy.p0.p0.i64(ptr {dst}, ptr {src}, i64 {nbytes}, i1 false)")

    def emit(instrs, index):
        for ins in instrs:
            if ins[0] == "call":
                _, name, ws = ins
                lines.append(f"  call void {quote(kernel_symbol(name))}({', '.join('ptr ' + value(w) for w in ws)})")
            elif ins[0] == "copy":
                memcpy(value(ins[1]), value(ins[2]), ins[3])
            elif ins[0] == "copy_step":
                d = f"%d{next(loops)}"
                lines.append(f"  {d}.off = mul i64 {index}, {ins[3]}")
                lines.append(f"  {d} = getelementptr i8, ptr {value(ins[1])}, i64 {d}.off")
                memcpy(d, value(ins[2]), ins[3])
            else:   # a counted loop; its index lives in a stack slot, so no phi needs the predecessor
                _, n, counter, body = ins
                L = f"l{next(loops)}"
                allocas.append(f"  %{L}.p = alloca i64")
                lines.extend([f"  store i64 0, ptr %{L}.p", f"  br label %{L}.head",
                              f"{L}.head:", f"  %{L}.i = load i64, ptr %{L}.p",
                              f"  %{L}.c = icmp slt i64 %{L}.i, {n}",
                              f"  br i1 %{L}.c, label %{L}.body, label %{L}.end",
                              f"{L}.body:", f"  store i64 %{L}.i, ptr {value(counter)}"])
                emit(body, f"%{L}.i")
                lines.extend([f"  %{L}.n = add i64 %{L}.i, 1", f"  store i64 %{L}.n, ptr %{L}.p",
                              f"  br label %{L}.head", f"{L}.end:"])
    emit(plan.body, None)
    lines[entry_at:entry_at] = allocas
    for j, w, nbytes in plan.copies:
        memcpy(f"%out{j}", value(w), nbytes)
    lines.append("  ret void")
    lines.append("}")
    return "\n".join(lines) + "\n"


def quote(symbol: str) -> str:
    """An LLVM global name for any symbol: ``@"..."`` with escapes."""
    return '@"' + symbol.replace("\\", "\\5C").replace('"', "\\22") + '"'


class Entry:
    """A program's JIT-compiled entry: ``run(arrays, out)`` -> results."""

    def __init__(self, plan, engine, address, program):
        self._engine = engine
        self._program = program     # owns the constants and blocks written into the code
        self.results = plan.results
        self.cfunc = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * (plan.n_inputs + len(plan.results)))(address)

    def run(self, arrays, out=None):
        from .ndarray import data_ptr, empty_aligned
        outs = list(out) if out is not None else [empty_aligned(*spec) for spec in self.results]
        self.cfunc(*[data_ptr(a) for a in arrays], *[data_ptr(o) for o in outs])
        return outs


def compile_entry(program) -> Entry:
    """The JIT-compiled entry of `program` (see plan_entry); raises
    NotCompilable with the reason."""
    plan = plan_entry(program)
    uid = next(_ids)
    symbols = {name: f"__tvmd_aot{uid}_k{i}" for i, name in enumerate(plan.kernels)}
    text = entry_ir(plan, f"__tvmd_aot{uid}_entry", symbols.__getitem__,
                    lambda w: f"inttoptr (i64 {w[1]} to ptr)")
    from ..backend.llvm.jit import engine_for_ir
    from ..backend.llvm.target import init_llvm
    from ..backend.spec import parse_target
    llvm = init_llvm()
    for name, sym in symbols.items():
        llvm.add_symbol(sym, program.lib[name].address)
    engine = engine_for_ir(text, parse_target("llvm").target_machine(1, jit=True))
    address = engine.get_function_address(f"__tvmd_aot{uid}_entry")
    if not address:
        raise NotCompilable("the entry did not compile")
    return Entry(plan, engine, address, program)
