"""The entry of a model with '?' dimensions as one native call.

runtime/aot.py compiles a program whose buffers are all static.  Here the
steps may be kernels sized per call (runtime/dynamic.py: their size
parameters, hidden dimensions and result sizes are sums of their inputs'
dimensions), reshapes that are views, and a KV cache's append; the entry
is then::

    i32 entry(ptr in0, ..., ptr sizes, ptr esc0, ...)

Every dimension a step uses is an affine function of the entry's input
dimensions (a kernel's result size is c + a sum of its arguments'
dimensions, and those are the inputs' or earlier results'), so building
the entry composes them into one integer matrix M, one row per dimension
needed: the kernels' size arguments and hidden dimensions, the shapes of
the buffers, the differences that size_checks require to be 0.  A call:

1. d = the inputs' dimensions and a 1; v = M d (one matrix product);
2. a check row that is not 0: None, and the caller runs the steps from
   Python, which raise the error that names the kernel and dimensions;
3. the bytes of each intermediate buffer (the product of its dimensions,
   rounded to 64) appended to v;
4. the buffers a result views are allocated here (escaping: the caller
   owns them), a KV cache's append through runtime.dynamic.grow_into
   (the new rows of a buffer with room);
5. one call: the native code loads the sizes from v, allocates each
   intermediate with aligned_alloc when its step runs and frees it after
   the last step that reads a value viewing it (the memory plan: by
   liveness, sized per call), calls the kernels; it returns 1 when an
   allocation fails, having freed what it held.

No Python runs between kernels: a 12-layer GPT-2 decoding step ran about
185 steps from Python at 10-20 us each.  What it cannot do,
NotCompilable says, and the program keeps its Python steps: an
interpreted op, a loop, a kernel with scalars other than sizes, an append
whose past is not an entry input or whose result is not returned.
"""

from __future__ import annotations

import itertools

import numpy as np

from .aot import NotCompilable, quote
from .dynamic import grow_into, sized_signature
from .ndarray import data_ptr, empty_aligned

_ids = itertools.count()
ALIGN = 64


class _Buffer:
    """A buffer a step defines: `shape` (rows of M, or ints), `dtype`; kind
    "tmp" (intermediate), "esc" (allocated by the caller), "grow" (an
    append's new rows), "addr" (a constant or planned block: `array`),
    "arg" (entry input `index`)."""
    __slots__ = ("id", "shape", "dtype", "kind", "index", "array", "last", "esc")

    def __init__(self, id_, shape, dtype, kind, index=None, array=None):
        self.id, self.shape, self.dtype, self.kind, self.index, self.array = id_, shape, dtype, kind, index, array
        self.last = -1
        self.esc = None


class DynamicEntry:
    """A program's entry compiled for '?' sizes: ``run(arrays)`` -> the
    results, or None when a size check fails (run the steps instead)."""

    def __init__(self, program):
        self.program = program
        self._plan()
        self._compile()

    # -- planning ----------------------------------------------------------------

    def _row(self, const=0):
        r = np.zeros(self.width, np.int64)
        r[-1] = const
        return r

    def _plan(self):
        prog = self.program
        arrays = prog.template
        types = prog.input_types
        offsets, at = [], 0
        for t in types:
            offsets.append(at)
            at += len(t.shape)
        self.width = at + 1
        self.in_ranks = [len(t.shape) for t in types]
        rows = []            # the rows of M, in order
        index = {}           # bytes of a row -> its position

        def need(r):
            if isinstance(r, (int, np.integer)):
                r = self._row(int(r))
            k = r.tobytes()
            if k not in index:
                index[k] = len(rows)
                rows.append(r)
            return index[k]
        value = {}           # slot -> ("buf", buffer, shape rows) | ("tuple", [values])
        self.buffers = []

        def new_buffer(shape, dtype, kind, **kw):
            b = _Buffer(len(self.buffers), shape, dtype, kind, **kw)
            self.buffers.append(b)
            return b
        for i, t in enumerate(types):
            shape = []
            for a, d in enumerate(t.shape):
                r = self._row(d if d is not None else 0)
                if d is None:
                    r[offsets[i] + a] = 1
                shape.append(r)
            b = new_buffer(shape, None, "arg", index=i)
            value[i] = ("buf", b, shape)
        for k, a in enumerate(arrays):
            if isinstance(a, np.ndarray):
                b = new_buffer([self._row(d) for d in a.shape], a.dtype, "addr", array=a)
                value[k] = ("buf", b, b.shape)
        checks, calls = [], []
        for si, step in enumerate(prog.static_steps):
            kind = step[0]
            if kind == "tuple":
                _, out, ins = step
                value[out] = ("tuple", [value[i] for i in ins])
                reads = ins
            elif kind == "get":
                _, out, src, idx = step
                v = value[src]
                if v[0] != "tuple":
                    raise NotCompilable("a get_item of a value that is not a tuple of buffers")
                value[out] = v[1][idx]
                reads = [src]
            elif kind in ("kernel", "dynamic"):
                c = self._static_kernel(step, value, new_buffer, need) if kind == "kernel" else \
                    self._dynamic_kernel(step, value, new_buffer, need, checks)
                if c is not None:   # (None: a view)
                    c["step"] = si
                    calls.append(c)
                reads = step[3]
            elif kind == "loop":
                raise NotCompilable("a loop in a model with '?' dimensions")
            else:
                raise NotCompilable(step[1], step[2])
            for r in reads:
                for b in _buffers_of(value[r]):
                    b.last = max(b.last, si)
        # what a result views escapes: the caller allocates it and owns it
        self.results = []
        for j, s in enumerate(prog.returns):
            v = value[s]
            if v[0] == "tuple":
                raise NotCompilable("a result is a tuple")
            _, b, shape = v
            if b.kind == "tmp":
                b.kind = "esc"
            self.results.append((b, [need(r) for r in shape]))
        for b in self.buffers:
            if b.kind == "grow" and not any(r[0] is b for r in self.results):
                raise NotCompilable("a KV cache's append whose result is not returned")
        self.calls = calls
        self.one = need(1)   # a row of the constant 1: pads the intermediates' shapes (_compile)
        self.M = np.array(rows, np.int64).reshape(len(rows), self.width)
        self.C = np.array(checks, np.int64).reshape(len(checks), self.width)

    def _static_kernel(self, step, value, new_buffer, need):
        _, name, out, ins, fixed_out = step
        prog = self.program
        sig = prog.lib[name].sig
        if any(p.kind != "buffer" for p in sig.params):
            raise NotCompilable(f"kernel @{name} takes dynamic dimensions or scalars")
        vals = []
        for k, b in enumerate(fixed_out):
            if b is not None:
                buf = new_buffer([self._row(d) for d in b.shape], b.dtype, "addr", array=b)
                shape = b.shape
            else:   # returned: the caller allocates it
                shape, dt = prog.bufs[(out, k)]
                buf = new_buffer([need(d) for d in shape], np.dtype(dt), "tmp")
            vals.append(("buf", buf, [self._row(d) for d in shape]))
        outs = [v[1] for v in vals]
        value[out] = vals[0] if len(vals) == 1 else ("tuple", vals)
        args = [value[i] for i in ins]
        if any(a[0] != "buf" for a in args):
            raise NotCompilable(f"kernel @{name} takes a tuple")
        return {"name": name, "ins": [a[1] for a in args], "outs": outs, "sizes": [], "hidden": []}

    def _dynamic_kernel(self, step, value, new_buffer, need, checks):
        from ..ir import types as T
        _, name, out, ins, callee, as_tuple, view, append_to = step
        kernel = self.program.lib[name]
        sig = kernel.sig
        attrs = callee.attributes
        args = [value[i] for i in ins]
        if any(a[0] != "buf" for a in args):
            raise NotCompilable(f"kernel @{name} takes a tuple")
        shapes = [list(a[2]) for a in args]
        size_args = [tuple(x) for x in attrs.get("size_args", ())]
        fill = [(k, ax, list(size)) for k, ax, size in attrs.get("result_sizes", ())]

        def size_row(size, sh):
            r = self._row(size[0])
            for k in range(1, len(size), 2):
                r = r + sh[size[k]][size[k + 1]]
            return r

        def out_shapes(sh):
            res = []
            for b in callee.outputs:
                res.append([self._row(d if d is not None else 0) for d in b.type.shape])
            for k, ax, size in fill:
                res[k][ax] = size_row(size, sh)
            return res
        for a, b in attrs.get("size_checks", ()):
            d = size_row(list(a), shapes) - size_row(list(b), shapes)
            if d.any():
                checks.append(d)
        full = out_shapes(shapes)
        dts = [np.dtype(T.storage_numpy_dtype(b.type.element_type)) for b in callee.outputs]
        if view:
            src = args[0][1]
            value[out] = ("buf", src, full[0])
            return None
        call_shapes = shapes
        if append_to is not None:
            p, axis = append_to
            past = args[p][1]
            if past.kind != "arg":
                raise NotCompilable(f"@{name} appends to a past that is not an entry input")
            call_shapes = [list(s) for s in shapes]
            call_shapes[p][axis] = self._row(0)
        call_out = out_shapes(call_shapes)
        declared = sig.declared
        if not sized_signature(kernel, len(ins), len(size_args), len(callee.outputs)):
            raise NotCompilable(f"kernel @{name}: parameters other than tensors, sizes and outputs")
        if any(q.type != "index" for q in declared if q.kind == "scalar"):   # the entry passes i64
            raise NotCompilable(f"kernel @{name}: a scalar parameter that is not an index")
        outs = []
        for k, dt in enumerate(dts):
            if append_to is not None:
                b = new_buffer([need(r) for r in full[k]], dt, "grow")
                b.esc = (append_to, args[append_to[0]][1].index)
            else:
                b = new_buffer([need(r) for r in call_out[k]], dt, "tmp")
            outs.append(b)
        vals = [("buf", b, full[k]) for k, b in enumerate(outs)]
        value[out] = ("tuple", vals) if as_tuple else vals[0]
        n_in, n_sizes = len(ins), len(size_args)
        hidden = []
        for q in sig.params[len(declared):]:
            b, a = q.buffer, q.axis
            if b < n_in:
                hidden.append(need(call_shapes[b][a]))
            elif b >= n_in + n_sizes:
                hidden.append(need(call_out[b - n_in - n_sizes][a]))
            else:
                raise NotCompilable(f"kernel @{name}: a hidden dimension of a scalar")
        return {"name": name, "ins": [a[1] for a in args], "outs": outs,
                "sizes": [need(call_shapes[i][a]) for i, a in size_args], "hidden": hidden}

    # -- code ----------------------------------------------------------------------

    def _compile(self):
        import ctypes

        from ..backend.llvm.jit import engine_for_ir
        from ..backend.llvm.target import init_llvm
        from ..backend.spec import parse_target
        uid = next(_ids)
        names = list(dict.fromkeys(c["name"] for c in self.calls))
        self.symbols = {n: f"__tvmd_aotd{uid}_k{i}" for i, n in enumerate(names)}
        self.tmps = [b for b in self.buffers if b.kind == "tmp"]
        self.escs = [b for b in self.buffers if b.kind in ("esc", "grow")]
        # per intermediate: its dims' rows, padded with a row of the constant 1
        rank = max([len(b.shape) for b in self.tmps] + [1])
        self.gather = np.array([b.shape + [self.one] * (rank - len(b.shape)) for b in self.tmps], np.int64) \
            .reshape(len(self.tmps), rank)
        self.itemsize = np.array([b.dtype.itemsize for b in self.tmps], np.int64)
        text = self._ir(f"__tvmd_aotd{uid}_entry")
        llvm = init_llvm()
        for n, sym in self.symbols.items():
            llvm.add_symbol(sym, self.program.lib[n].address)
        self._engine = engine_for_ir(text, parse_target("llvm").target_machine(1, jit=True))
        address = self._engine.get_function_address(f"__tvmd_aotd{uid}_entry")
        if not address:
            raise NotCompilable("the dynamic entry did not compile")
        n = len(self.in_ranks) + 1 + len(self.escs) + sum(1 for b in self.escs if b.kind == "grow")
        self.cfunc = ctypes.CFUNCTYPE(ctypes.c_int32, *[ctypes.c_void_p] * n)(address)

    def _ir(self, entry):
        n_in = len(self.in_ranks)
        # an append's result: %e the new rows it writes, %g the whole (past and new) later steps read
        params = [f"ptr %in{i}" for i in range(n_in)] + ["ptr %v"] + \
            [f"ptr %e{j}" for j in range(len(self.escs))] + \
            [f"ptr %g{j}" for j, b in enumerate(self.escs) if b.kind == "grow"]
        lines = []
        for n in self.symbols:
            kernel = self.program.lib[n]
            tys = ["ptr" if p.kind == "buffer" else "i64" for p in kernel.sig.params]
            lines.append(f"declare void {quote(self.symbols[n])}({', '.join(tys)})")
        lines += ["declare ptr @aligned_alloc(i64, i64)", "declare void @free(ptr)",
                  f"define i32 {quote(entry)}({', '.join(params)}) {{", "entry:"]
        tmp_at = {b.id: k for k, b in enumerate(self.tmps)}
        esc_at = {b.id: k for k, b in enumerate(self.escs)}
        live = []
        counter = itertools.count()

        def load(k):
            t = f"%s{next(counter)}"
            lines.append(f"  {t}.p = getelementptr i64, ptr %v, i64 {k}")
            lines.append(f"  {t} = load i64, ptr {t}.p")
            return t

        def ptr(b):
            if b.kind == "arg":
                return f"%in{b.index}"
            if b.kind == "addr":
                return f"inttoptr (i64 {b.array.ctypes.data} to ptr)"
            if b.kind == "grow":
                return f"%g{esc_at[b.id]}"
            if b.id in esc_at:
                return f"%e{esc_at[b.id]}"
            return f"%b{b.id}"
        for c in self.calls:
            for b in c["outs"]:
                if b.kind != "tmp":
                    continue
                nb = load(self.M.shape[0] + tmp_at[b.id])   # its bytes, after M's rows
                lines.append(f"  %b{b.id} = call ptr @aligned_alloc(i64 {ALIGN}, i64 {nb})")
                ok = f"ok{next(counter)}"
                fail = f"fail{next(counter)}"
                lines.append(f"  %b{b.id}.null = icmp eq ptr %b{b.id}, null")
                lines.append(f"  br i1 %b{b.id}.null, label %{fail}, label %{ok}")
                lines.append(f"{fail}:")
                for x in live:
                    lines.append(f"  call void @free(ptr %b{x.id})")
                lines.append("  ret i32 1")
                lines.append(f"{ok}:")
                live.append(b)
            args = [f"ptr {ptr(b)}" for b in c["ins"]]
            args += [f"i64 {load(k)}" for k in c["sizes"]]
            args += [f"ptr %e{esc_at[b.id]}" if b.kind == "grow" else f"ptr {ptr(b)}" for b in c["outs"]]
            args += [f"i64 {load(k)}" for k in c["hidden"]]
            lines.append(f"  call void {quote(self.symbols[c['name']])}({', '.join(args)})")
            for b in list(live):
                if b.last <= c["step"]:
                    lines.append(f"  call void @free(ptr %b{b.id})")
                    live.remove(b)
        for b in live:
            lines.append(f"  call void @free(ptr %b{b.id})")
        lines += ["  ret i32 0", "}"]
        return "\n".join(lines) + "\n"

    # -- a call --------------------------------------------------------------------

    def run(self, arrays):
        d = np.empty(self.width, np.int64)
        at = 0
        for a, r in zip(arrays, self.in_ranks):
            d[at:at + r] = a.shape
            at += r
        d[-1] = 1
        if len(self.C) and (self.C @ d).any():
            return None
        v = self.M @ d
        nb = np.prod(v[self.gather], axis=1) * self.itemsize
        nb = np.maximum((nb + (ALIGN - 1)) // ALIGN * ALIGN, ALIGN)
        sizes = np.concatenate([v, nb])
        escs, wholes = [], []
        made = {}
        for b in self.escs:
            shape = tuple(int(v[k]) for k in b.shape)
            if b.kind == "grow":
                (p, axis), i = b.esc
                dest, result = grow_into(arrays[i], shape, axis, b.dtype)
                made[b.id] = result
                escs.append(dest)
                wholes.append(result)
            else:
                a = empty_aligned(shape, b.dtype)
                made[b.id] = a
                escs.append(a)
        rc = self.cfunc(*[data_ptr(a) for a in arrays], sizes.ctypes.data, *[data_ptr(a) for a in escs],
                        *[data_ptr(a) for a in wholes])
        if rc:
            raise MemoryError("the model's intermediate buffers could not be allocated")
        outs = []
        for b, shape in self.results:
            shape = tuple(int(v[k]) for k in shape)
            if b.kind in ("arg", "addr"):
                src = arrays[b.index] if b.kind == "arg" else b.array
                outs.append(np.array(src).reshape(shape))
            else:
                outs.append(made[b.id].reshape(shape))
        return outs


def _buffers_of(v):
    if v[0] == "tuple":
        for x in v[1]:
            yield from _buffers_of(x)
    else:
        yield v[1]


def compile_dynamic_entry(program) -> DynamicEntry:
    """The dynamic entry of `program`; raises NotCompilable with the reason."""
    if program.lib is None:
        raise NotCompilable("no compiled kernels")
    return DynamicEntry(program)

