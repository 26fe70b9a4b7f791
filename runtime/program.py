"""The entry function as a precomputed step list over planned buffers.

    prog = Program(module, main_op, lib, evaluator)
    outs = prog.run(arrays, profile=None)

Each op of the straight-line entry body becomes one step writing one slot
of an environment list:

    constant            bound once (aligned copy), pre-filled in the slots
    call @tir_kernel    the kernel's C entry called with data pointers; its
                        outputs are planned buffers (fixed pointers) or,
                        when returned, fresh arrays each run
    call @relay_func    a function --lower-relay-to-te left to the
                        interpreter: its ops' numpy compute()
    tuple / get_item    Python tuples
    any other relay op  its numpy compute()

Returned values that may view a constant or an input are copied, so the
caller owns every output.  `profile` (a :class:`Profile`) times each kernel
and interpreted step.  When every step is a kernel (or tuple plumbing),
runtime/aot.py compiles ``static_steps`` into one native entry function,
which an unprofiled run calls instead of the steps.
"""

from __future__ import annotations

import time

import numpy as np

from ..backend.abi import storage_dtype
from ..dialects.relay.ops import adt as relay_adt
from ..dialects.relay.ops import closure as relay_closure
from ..dialects.relay.ops import control as relay_control
from ..dialects.relay.ops import function as relay
from ..dialects.relay.ops import loop as relay_loop
from ..dialects.tir import ops as tir
from ..ir import types as T
from ..ir.attributes import check_constant_size
from .ndarray import as_aligned, as_kernel_input, available_memory, copy_into, data_ptr, empty_aligned

_NOT_STRAIGHT = (relay_control.IfOp, relay_adt.MatchOp, relay_closure.FnOp, relay_closure.FuncRefOp,
                 relay_adt.ConstructOp, relay_closure.CallIndirectOp)


def straight_line(module, f) -> bool:
    """Whether `f`'s body is one block of ops a Program runs: no control
    flow but counted loops whose bodies are straight-line in turn."""
    return len(f.regions[0].blocks) == 1 and _straight_block(module, f.body)


def _straight_block(module, block) -> bool:
    for op in block.ops:
        if isinstance(op, relay_loop.LoopOp):
            if len(op.regions[0].blocks) != 1 or not _static(op.results[0].type) \
                    or not _straight_block(module, op.body):
                return False
            continue
        if op.regions or isinstance(op, _NOT_STRAIGHT):
            return False
        if isinstance(op, relay.CallOp):
            callee = module.lookup(op.attributes["callee"].name)
            if not isinstance(callee, (tir.FuncOp, relay.FuncOp)):
                return False
        if len(op.results) > 1:
            return False
    return True


def _static(t) -> bool:
    if isinstance(t, T.TupleType):
        return all(_static(x) for x in t.types)
    return isinstance(t, T.TensorType) and t.is_static


def sized_per_call(callee) -> bool:
    """Whether kernel `callee` takes sizes read per call (runtime/dynamic.py):
    a '?' in its outputs, or in its inputs only (a whole '?' tensor's
    minimum into a scalar)."""
    return any(not b.type.is_static for b in callee.outputs) or bool(callee.attributes.get("size_args"))


def captured(loop):
    """The values `loop`'s body (nested regions included) reads from outside it."""
    inside, out = set(), []
    for block in _blocks(loop):
        inside.update(block.args)
        for op in block.ops:
            inside.update(op.results)
    for block in _blocks(loop):
        for op in block.ops:
            for v in op.operands:
                if v not in inside and v not in out:
                    out.append(v)
    return out


def _blocks(op):
    for r in op.regions:
        for b in r.blocks:
            yield b
            for inner in b.ops:
                yield from _blocks(inner)


def module_lookup(module, op):
    """The callee of a relay.call, else None."""
    return module.lookup(op.attributes["callee"].name) if isinstance(op, relay.CallOp) else None


def _shape_text(t):
    if isinstance(t, (T.TensorType, T.MemRefType)):
        return "x".join("?" if d is None else str(d) for d in t.shape) or "scalar"
    if isinstance(t, T.TupleType):
        return "(" + ", ".join(_shape_text(x) for x in t.types) + ")"
    return str(t)


def _op_label(op):
    return getattr(op, "op_name", None) or op.name.removeprefix("relay.")


class Profile:
    """Per-kernel call counts and times, by label."""

    def __init__(self):
        self.rows = {}   # label -> [calls, seconds, shapes, interpreted]
        self.total = 0.0

    def add(self, label, seconds, shapes, interpreted):
        r = self.rows.get(label)
        if r is None:
            r = self.rows[label] = [0, 0.0, shapes, interpreted]
        r[0] += 1
        r[1] += seconds

    def table(self) -> str:
        """kernel, calls, total ms, share %, shapes (inputs -> output), by time."""
        rows = sorted(self.rows.items(), key=lambda kv: -kv[1][1])
        total = sum(r[1] for _, r in rows) or 1e-30
        names = [lbl + (" (interpreted)" if r[3] else "") for lbl, r in rows]
        w = max([len("kernel")] + [len(n) for n in names])
        lines = [f"{'kernel':<{w}}  {'calls':>5}  {'total ms':>10}  {'share %':>7}  shapes (inputs -> output)"]
        for n, (_, r) in zip(names, rows):
            lines.append(f"{n:<{w}}  {r[0]:>5}  {r[1] * 1e3:>10.3f}  {100 * r[1] / total:>7.1f}  {r[2]}")
        calls = sum(r[0] for _, r in rows)
        lines.append(f"{'total':<{w}}  {calls:>5}  {total * 1e3:>10.3f}  {100.0 if rows else 0.0:>7.1f}")
        return "\n".join(lines)


class Program:
    def __init__(self, module, f, lib, evaluator):
        from .memory_plan import plan_memory
        self.evaluator = evaluator
        self.lib = lib
        self.module = module
        slot = self.slot = {}
        for a in f.body.args:
            slot[a] = len(slot)
        self.input_types = [a.type for a in f.body.args]
        self.n_inputs = len(slot)
        seed = {a: frozenset({("input", i)}) for i, a in enumerate(f.body.args)}
        self.consts = {}
        self.bufs = {}       # buffer id -> (shape, numpy dtype)
        self.owned = []      # arrays of loops (counters, carried state, stacked outputs): fixed addresses
        self.nested = []     # (loop op, its body's plan)
        self._profile = None
        plan_steps, ops, ret = self._collect(f.body, seed)
        if not isinstance(ret, relay.ReturnOp):
            raise _error(f"@{f.sym_name} has no return")
        plan = plan_memory(plan_steps, list(ret.operands), seed)
        self.plan = plan
        # one list of blocks: the entry's plan, then each loop body's
        self.block_of, sizes = dict(plan.block_of), list(plan.block_sizes)
        for _, p in self.nested:
            self.block_of.update({b: None if k is None else k + len(sizes) for b, k in p.block_of.items()})
            sizes += p.block_sizes
        need, have = sum(sizes), available_memory()
        if have is not None and need > have:   # refuse before the kernel's OOM killer does
            raise _error(f"@{f.sym_name} needs {need} bytes of intermediate buffers, more than the "
                         f"{have} bytes of memory available")
        self.blocks = [empty_aligned((n,), np.uint8) for n in sizes]
        self.template = [None] * len(slot)
        for k, a in self.consts.items():
            self.template[k] = a
        self.sinks = {}   # during a run with out=: env slot of a result -> the caller's array
        self.static_steps = []   # what runtime/aot.py compiles: see aot.plan_entry
        self.steps = self._steps(ops)
        self.drops = _dead_after(plan_steps, self.slot, ret.operands)
        self.blocks += self.owned   # exported like the plan's blocks (runtime/export.py)
        self.returns = [slot[v] for v in ret.operands]
        # a returned value that may view a constant, an input or a loop's own
        # arrays is copied
        self.copy_out = [any(isinstance(b, tuple) and b and b[0] in ("const", "input", "owned")
                             for b in plan.views.get(v, ())) for v in ret.operands]
        self.result_specs = [(tuple(v.type.shape), T.storage_numpy_dtype(v.type.element_type))
                             if isinstance(v.type, T.TensorType) and v.type.is_static else None
                             for v in ret.operands]
        # the entry as one native function (runtime/aot.py), or why not; a
        # reason build() has reported already (an interpreted function) is
        # not said twice
        self.entry, self.entry_why, self.entry_why_reported = None, None, False
        self.dynamic_entry = None   # the same for '?' sizes (runtime/aot_dynamic.py)
        if lib is not None:
            from .aot import NotCompilable, compile_entry
            try:
                self.entry = compile_entry(self)
            except NotCompilable as e:
                self.entry_why, self.entry_why_reported = str(e), e.reported
            if self.entry is None and any(s[0] == "dynamic" for s in self.static_steps) and \
                    all(isinstance(t, T.TensorType) for t in self.input_types):
                from .aot_dynamic import compile_dynamic_entry
                try:
                    self.dynamic_entry = compile_dynamic_entry(self)
                    self.entry_why = None
                except NotCompilable as e:
                    self.entry_why, self.entry_why_reported = str(e), e.reported

    def _collect(self, block, seed):
        """Slots, constants and buffers of `block`'s ops: (memory-plan steps,
        [(op, callee)], the terminator).  A loop's body is collected and
        planned on its own (its blocks live while the loop runs); to the
        enclosing plan the loop is one step reading what its body reads."""
        from .memory_plan import plan_memory
        slot, consts, bufs = self.slot, self.consts, self.bufs
        plan_steps, ops = [], []
        for op in block.ops:
            if isinstance(op, (relay.ReturnOp, relay_control.YieldOp)):
                return plan_steps, ops, op
            r = op.results[0]
            slot[r] = len(slot)
            reads = list(op.operands)
            if isinstance(op, relay.ConstantOp):
                # binding materialises the constant (a splat is one element
                # until here): past the limit it is an error at the op
                check_constant_size(r.type, op.loc, f"binding '{op.name}'")
                a = np.ascontiguousarray(T.as_storage(op.compute()))
                if isinstance(r.type, T.TensorType) and r.type.is_static and a.shape != tuple(r.type.shape) \
                        and a.size == int(np.prod(r.type.shape, dtype=np.int64)):
                    a = a.reshape(r.type.shape)
                consts[slot[r]] = as_aligned(a)
                seed[r] = frozenset({("const", slot[r])})
                continue
            if isinstance(op, relay_loop.LoopOp):
                body_seed = {}
                for a in op.body.args:
                    slot[a] = len(slot)
                    body_seed[a] = frozenset({("owned", slot[a])})
                body_steps, body_ops, y = self._collect(op.body, body_seed)
                # the yielded values stay live to the end of a step
                body_steps.append(([], list(y.operands), None, "yield"))
                self.nested.append((op, plan_memory(body_steps, [], body_seed)))
                seed[r] = frozenset({("owned", slot[r])})
                plan_steps.append(([], reads + captured(op), r, "owned"))
                ops.append((op, body_ops))
                continue
            callee = module_lookup(self.module, op)
            if isinstance(callee, tir.FuncOp):
                defines = []
                if sized_per_call(callee):
                    # sized per call (runtime/dynamic.py): not in the static plan;
                    # a reshape's result views its input (so, to the plan, it
                    # may view what the input views)
                    plan_steps.append(([], reads, r, "interpreted" if "reshape_view" in callee.attributes
                                       else "kernel"))
                    ops.append((op, callee))
                    continue
                for k, b in enumerate(callee.outputs):
                    t = b.type
                    dt = T.storage_numpy_dtype(t.element_type)
                    bid = (slot[r], k)
                    bufs[bid] = (tuple(t.shape), dt)
                    defines.append((bid, int(np.prod(t.shape, dtype=np.int64)) * dt.itemsize))
                plan_steps.append((defines, reads, r, "kernel"))
            else:
                plan_steps.append(([], reads, r, "interpreted"))
            ops.append((op, callee))
        return plan_steps, ops, None

    def _steps(self, ops):
        return [self._loop_step(op, x) if isinstance(op, relay_loop.LoopOp)
                else self._step(op, x, self.slot, self.bufs, self.consts) for op, x in ops]

    def _loop_step(self, op, body_ops):
        """A loop: its carried state, step counter and stacked outputs in
        arrays of its own; the body's steps run trip_count times."""
        slot, n, k = self.slot, op.trip_count, len(op.operands)
        out = slot[op.results[0]]
        types = op.results[0].type.types

        def own(t):
            a = empty_aligned(tuple(t.shape), T.storage_numpy_dtype(t.element_type))
            self.owned.append(a)
            return a
        counter = own(op.index.type)
        carry = [own(t) for t in types[:k]]
        stacked = [own(t) for t in types[k:]]
        inits = [slot[v] for v in op.operands]
        y = op.yield_op()
        yields = [slot[v] for v in y.operands]
        index, carried = slot[op.index], [slot[a] for a in op.carried]
        outer = self.static_steps
        self.static_steps = []
        body = self._steps(body_ops)
        body_static, self.static_steps = self.static_steps, outer
        self.static_steps.append(("loop", out, n, (index, counter), list(zip(carried, carry)), stacked,
                                  inits, body_static, yields))
        state = self

        def run(env):
            for c, i in zip(carry, inits):
                np.copyto(c, np.reshape(env[i], c.shape))
            env[index] = counter
            profile = state._profile
            for i in range(n):
                counter[...] = i
                for s_, c in zip(carried, carry):
                    env[s_] = c
                state._run_steps(body, env, profile)
                # this step's outputs and next state are read before a carry is
                # overwritten: a yield may view a carried array
                for a, s_ in zip(stacked, yields[k:]):
                    a[i] = env[s_]
                nxt = [np.array(env[s_]) for s_ in yields[:k]]
                for c, v in zip(carry, nxt):
                    np.copyto(c, np.reshape(v, c.shape))
            env[out] = (*carry, *stacked)
        shapes = ", ".join(_shape_text(v.type) for v in op.operands) + " -> " + _shape_text(op.results[0].type)
        return run, None, shapes

    def _buffer(self, bid, bufs):
        shape, dt = bufs[bid]
        blk = self.block_of[bid]
        if blk is None:
            return None
        n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        return self.blocks[blk][:n].view(dt).reshape(shape)

    def _step(self, op, callee, slot, bufs, consts):
        out = slot[op.results[0]]
        ins = [slot[v] for v in op.operands]
        shapes = (", ".join(_shape_text(v.type) for v in op.operands) + " -> "
                  + _shape_text(op.results[0].type))
        if isinstance(callee, tir.FuncOp):
            return self._kernel_step(op, callee, out, ins, bufs, consts, shapes)
        ev = self.evaluator
        if isinstance(op, relay_control.TupleOp):
            self.static_steps.append(("tuple", out, ins))

            def run(env):
                env[out] = tuple(env[i] for i in ins)
            return run, None, shapes
        if isinstance(op, relay_control.TupleGetItemOp):
            index = op.attributes["index"]
            src = ins[0]
            self.static_steps.append(("get", out, src, index))

            def run(env):
                env[out] = env[src][index]
            return run, None, shapes
        if callee is not None:   # a relay function left to the interpreter
            self.static_steps.append(("other", f"@{callee.sym_name} runs in the interpreter", True))

            def run(env):
                outs = ev.run_function(callee, *[env[i] for i in ins])
                env[out] = outs[0] if len(outs) == 1 else tuple(outs)
            return run, (callee.sym_name, True), shapes

        self.static_steps.append(("other", f"relay op '{_op_label(op)}' runs on numpy", False))

        def run(env):
            env[out] = ev.evaluate(op, [env[i] for i in ins])
        return run, (_op_label(op), True), shapes

    def _kernel_step(self, op, callee, out, ins, bufs, consts, shapes):
        kernel = self.lib[callee.sym_name]
        if sized_per_call(callee):
            from .dynamic import dynamic_kernel_step
            grows = callee.attributes.get("append_to")
            grows = tuple(grows) if grows is not None else None
            as_tuple, view = isinstance(op.results[0].type, T.TupleType), "reshape_view" in callee.attributes
            self.static_steps.append(("dynamic", callee.sym_name, out, ins, callee, as_tuple, view, grows))
            return dynamic_kernel_step(kernel, callee, out, ins, as_tuple, view=view, append_to=grows), \
                (callee.sym_name, False), shapes
        sinks = self.sinks
        sig = kernel.sig
        n_out = len(callee.outputs)
        rt = op.results[0].type
        as_tuple = isinstance(rt, T.TupleType) or n_out != 1
        rtypes = list(rt.types) if isinstance(rt, T.TupleType) else [rt]
        # the relay value's shape (a kernel may see a 0-d tensor as one element)
        views = [tuple(t.shape) if isinstance(t, T.TensorType) and t.is_static else None for t in rtypes]
        views += [None] * (n_out - len(views))
        fixed_out = [self._buffer((out, k), bufs) for k in range(n_out)]
        fixed_out = [b if b is None or v is None or b.shape == v else b.reshape(v)
                     for b, v in zip(fixed_out, views)]
        self.static_steps.append(("kernel", callee.sym_name, out, ins, fixed_out))
        out_specs = [bufs[(out, k)] for k in range(n_out)]
        out_specs = [(v if v is not None and int(np.prod(v, dtype=np.int64)) == int(np.prod(s, dtype=np.int64))
                      else s, dt) for (s, dt), v in zip(out_specs, views)]
        label = (callee.sym_name, False)
        fast = (kernel.unsupported is None and len(sig.params) == len(sig.declared)
                and all(p.kind == "buffer" for p in sig.params) and len(sig.params) == len(ins) + n_out)
        if not fast:
            def run(env):
                args = [as_kernel_input(env[i]) for i in ins]
                outs = [b if b is not None else empty_aligned(*spec) for b, spec in zip(fixed_out, out_specs)]
                kernel(*args, *outs)
                env[out] = tuple(outs) if as_tuple else outs[0]
            return run, label, shapes
        cfunc = kernel.cfunc
        # pointers known now: constants and planned outputs
        ptrs = [None] * (len(ins) + n_out)
        dyn_in = []
        for j, i in enumerate(ins):
            p = sig.params[j]
            size, dtype = int(np.prod(p.shape, dtype=np.int64)), storage_dtype(p.dtype)
            c = consts.get(i)
            if c is not None and c.size == size and c.dtype == dtype:
                ptrs[j] = c.ctypes.data
            else:
                dyn_in.append((j, i, size, dtype))
        name = callee.sym_name
        dyn_out = []
        for k, b in enumerate(fixed_out):
            if b is not None:
                ptrs[len(ins) + k] = b.ctypes.data
            else:
                dyn_out.append((len(ins) + k, k))

        def run(env):
            args = list(ptrs)
            for j, i, size, dtype in dyn_in:
                a = env[i]
                if not isinstance(a, np.ndarray):
                    a = np.asarray(a)
                # the pointer is all the kernel gets: a wrong array would be read out of bounds
                if a.size != size or a.dtype != dtype:
                    raise _error(f"@{name}: argument {j} is {a.dtype}{list(a.shape)}, "
                                 f"the kernel takes {size} elements of {dtype}")
                a = env[i] = as_kernel_input(a)
                args[j] = data_ptr(a)
            outs = list(fixed_out)
            for j, k in dyn_out:
                a = sinks.get(out) if k == 0 and not as_tuple else None
                if a is None:
                    a = empty_aligned(*out_specs[k])
                outs[k] = a
                args[j] = data_ptr(a)
            cfunc(*args)
            env[out] = tuple(outs) if as_tuple else outs[0]
        return run, label, shapes

    def run(self, arrays, profile=None, out=None):
        """The results for input `arrays`; `out`: checked arrays, one per
        result, that a kernel computing a result writes straight into (any
        other result is copied in).  Without a profile, through the
        compiled entry when there is one."""
        if profile is None and self.entry is not None:
            return self.entry.run([as_kernel_input(a) for a in arrays], out)
        if profile is None and out is None and self.dynamic_entry is not None:
            outs = self.dynamic_entry.run([as_kernel_input(a) for a in arrays])
            if outs is not None:
                return outs
            # a size check failed: the steps below raise the error that names it
        sinks = self.sinks
        sinks.clear()
        if out is not None:
            sinks.update(zip(self.returns, out))
        env = list(self.template)
        for i, a in enumerate(arrays):
            env[i] = a
        self._profile = profile
        self._run_steps(self.steps, env, profile, self.drops)
        if out is not None:
            sinks.clear()
            return copy_into(out, [env[k] for k in self.returns])
        outs = []
        for k, c in zip(self.returns, self.copy_out):
            v = env[k]
            outs.append(_copy(v) if c else v)
        return outs

    @staticmethod
    def _run_steps(steps, env, profile, drops=None):
        """Run `steps` over `env`; with `drops` (per step, the slots whose
        last reader it is), each value is let go after its last use."""
        if profile is None:
            if drops is None:
                for run, _, _ in steps:
                    run(env)
                return
            for (run, _, _), dead in zip(steps, drops):
                run(env)
                for k in dead:
                    env[k] = None
            return
        clock = time.perf_counter
        for i, (run, label, shapes) in enumerate(steps):
            if label is None:
                run(env)
            else:
                t0 = clock()
                run(env)
                profile.add(label[0], clock() - t0, shapes, label[1])
            for k in (drops[i] if drops is not None else ()):
                env[k] = None


def _dead_after(plan_steps, slot, returned):
    """Per top-level step, the slots of values it is the last to read (not
    returned ones): the memory plan of what runs from Python.  A buffer
    sized per call ('?' dimensions) is freed when the last value that
    holds it goes -- a view (a reshape, a tuple, a get_item) holds its
    base -- so the allocator hands its memory to the next step's buffers,
    and a run's peak is what is live at once rather than every
    intermediate of the run (a 12-layer decoder's prefill keeps each
    layer's activations no longer than the next layer needs them).
    Statically planned buffers live in the plan's blocks whatever env
    holds."""
    keep = {slot[v] for v in returned if v in slot}
    last = {}
    for i, (_, reads, _, _) in enumerate(plan_steps):
        for v in reads:
            k = slot.get(v)
            if k is not None:
                last[k] = i
    drops = [[] for _ in plan_steps]
    for k, i in last.items():
        if k not in keep:
            drops[i].append(k)
    return [tuple(d) for d in drops]


def _copy(v):
    """A copy the caller owns, keeping tuples and lists (sequences) as they are."""
    if isinstance(v, (tuple, list)):
        return type(v)(_copy(x) for x in v)
    return np.array(v) if isinstance(v, np.ndarray) else v


def _error(msg):
    from .executor import ExecutionError
    return ExecutionError(msg)
