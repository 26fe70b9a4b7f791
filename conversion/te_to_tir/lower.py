"""--lower-te-to-tir: each te.func becomes a tir.func of the same name.

    te.func @f(%A: tensor<4xf32>) -> tensor<4xf32>   =>   tir.func @f(%A: memref<4xf32>, %R: memref<4xf32>)
                                                              attributes {num_outputs = 1}

Parameters are the input buffers, then one output buffer per result (named
after the returned value).  A function that still has computes or schedule
ops is scheduled first (apply_schedule.py), so this pass works alone.

    te.realize (returned)      the output buffer
    te.realize (other)         tir.alloc (at the same place: local storage of
                               a compute_at stage is allocated inside its loop),
                               in the realize's scope (memref<.., "shared">),
                               {double_buffer} kept
    te.read                    tir.load
    te.read .. if %c else x    %i' = select %c, %i, 0 per index (always in
                               bounds; an index whose range is inside its
                               dimension anyway is kept), tir.load, then
                               select %c, %v, x
    te.write                   tir.store
    te.intrin                  tir.intrin
    te.extern_call @k(..)      the body of tir.func @k, inlined on the buffers
    return of a parameter, or of a value returned twice: a copy loop nest

Other ops (arith, tir.for, tir.if) are copied, their regions converted;
constants are shared, one of each at the function's entry.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir import types as T
from ...ir.core import Block, Region
from ...ir.pass_manager import ModulePass
from ...dialects.arith.ops import ConstantOp
from ...dialects.te import ops as te


@dataclass
class LowerTEToTIR(ModulePass):
    """Turn scheduled te functions into tir functions over buffers.

    Each te.func is replaced by its tir.func (scheduling it first when it
    still has computes); on the whole module, te.reducer ops no te.func
    needs any more go too, and so do the tir.funcs of te.externs (inlined)
    that nothing else names."""

    NAME = "lower-te-to-tir"
    OP = "te.func"

    def run(self, module, ctx):
        from ...dialects.te.ops import FuncOp, ReducerOp
        from .apply_schedule import default_untuned
        # templates not yet scheduled take their defaults, as --apply-schedule gives them
        default_untuned([op for op in module.body.ops if isinstance(op, FuncOp)])
        callees = {x.attributes["callee"].name for op in module.body.ops if isinstance(op, FuncOp)
                   for x in op.walk() if isinstance(x, (te.ExternOp, te.ExternCallOp))}
        super().run(module, ctx)
        if not any(isinstance(op, FuncOp) for op in module.body.ops):
            for op in list(module.body.ops):   # user reducers were cloned into the loops
                if isinstance(op, ReducerOp):
                    op.erase()
        if callees:
            _erase_unnamed(module, callees)

    def run_on(self, op, ctx):
        from ...dialects.te.ops import FuncOp
        if not isinstance(op, FuncOp):
            return
        from .apply_schedule import apply_to_func, default_untuned, needs_schedule
        if needs_schedule(op):
            default_untuned([op])   # nested under te.func(...): one function at a time
            apply_to_func(op)
        new = lower_func(op)
        op.parent.insert_before(op, new)
        op.erase()
        ctx.stat(self, "functions lowered")


def _erase_unnamed(module, names):
    """Erase the module's functions called `names` that no op names any more
    (their bodies were inlined at each te.extern_call)."""
    from ...ir.attributes import SymbolRef
    named = {a.name for op in module.walk(include_self=False) for a in op.attributes.values()
             if isinstance(a, SymbolRef)}
    for op in list(module.body.ops):
        if op.attributes.get("sym_name") in names - named:
            op.erase()


def memref(t):
    return T.MemRefType(t.shape, t.element_type)


def lower_func(func):
    from ...dialects.tir.ops import FuncOp
    ret = func.return_op
    outs = ret.operands
    params = list(func.body.args)
    names = [a.name for a in params]
    for i, v in enumerate(outs):   # an output buffer is named after the storage it replaces
        names.append(v.name if _realized(v) and v.name and v not in outs[:i] else f"out{i}")
    types = [a.type if a.type is T.index else memref(a.type) for a in params] + [memref(v.type) for v in outs]
    body = Block(types, names)
    mapping = dict(zip(params, body.args))
    out_args = body.args[len(params):]
    cv = _Converter(mapping, body)
    copies = []
    for v, arg in zip(outs, out_args):
        if _realized(v) and v not in cv.outputs:
            cv.outputs[v] = arg
        else:
            copies.append((v, arg))
    cv.block(func.body, body)
    for v, arg in copies:
        cv.copy(mapping[v], arg, func.loc)
    attrs = {k: v for k, v in func.attributes.items() if k != "function_type"}
    attrs["num_outputs"] = len(outs)
    return FuncOp((), (), attrs, [Region([body])], func.loc)


def _realized(v):
    d = v.defining_op()
    return isinstance(d, te.RealizeOp)


class _Converter:
    def __init__(self, mapping, body):
        from ...dialects.te.builder import Emitter
        self.m = mapping
        self.outputs = {}   # returned te.realize value -> output buffer
        self.e = Emitter(body, const_block=body)   # new constants go to the function's entry

    def block(self, src, dst):
        e = self.e
        outer = e.block
        e.at(dst)
        for op in src.ops:
            if isinstance(op, te.ReturnOp):
                break
            e.loc = op.loc
            self.op(op, e)
        e.at(outer)

    def op(self, op, e):
        m = self.m
        if op.name.startswith("te.") and not isinstance(op, _TE_MEMORY):
            raise op.error("is left after scheduling; lower-te-to-tir expects computes and schedule ops applied")
        if isinstance(op, te.RealizeOp):
            r = op.results[0]
            out = self.outputs.get(r)
            if out is None:
                scope = op.attributes.get("scope") or "global"
                db = {"double_buffer": op.attributes["double_buffer"]} if op.attributes.get("double_buffer") else {}
                if not r.type.is_static and (scope != "global" or db):   # run-time sizes: global, single only
                    what = f"a '{scope}' buffer" if scope != "global" else "a double-buffered one"
                    raise op.error(f"{what} needs a static shape, got {r.type}")
                out = e.op("tir.alloc", [m.get(x, x) for x in op.operands],
                           [T.MemRefType(r.type.shape, r.type.element_type, scope)], db, name=r.name)
            m[r] = out
        elif isinstance(op, ConstantOp):   # one of each, at the entry
            r = op.results[0]
            m[r] = e.const(op.attributes["value"], r.type)
        elif isinstance(op, te.ReadOp):
            m[op.results[0]] = self.read(op, e)
        elif isinstance(op, te.WriteOp):
            v, t, *idx = (m.get(x, x) for x in op.operands)
            e.op("tir.store", [v, t] + idx, [])
        elif isinstance(op, te.ExternCallOp):
            self.inline_call(op, e)
        elif isinstance(op, te.IntrinOp):
            r = e.op("tir.intrin", [m.get(x, x) for x in op.operands], [op.results[0].type],
                     {"intrin": op.attributes["intrin"]}, name=op.results[0].name)
            m[op.results[0]] = r
        elif op.regions:
            # the new op goes in first, so that its blocks see the function's
            # entry (where the emitter keeps the constants it shares)
            regions, pairs = [], []
            for reg in op.regions:
                nr = Region()
                for b in reg.blocks:
                    nb = nr.add_block(Block([a.type for a in b.args], [a.name for a in b.args]))
                    m.update(zip(b.args, nb.args))
                    pairs.append((b, nb))
                regions.append(nr)
            new = type(op)([m.get(x, x) for x in op.operands], [r.type for r in op.results],
                           dict(op.attributes), regions, op.loc)
            e.block.append(new)
            m.update(zip(op.results, new.results))
            for b, nb in pairs:
                self.block(b, nb)
        else:
            e.block.append(op.clone(m))

    def inline_call(self, op, e):
        """The callee tir.func's body, its buffer parameters bound to the
        call's buffers (LLVM and the TIR interpreter both run it so)."""
        callee = op.callee_op()
        mapping = dict(zip(callee.body.args, [self.m.get(x, x) for x in op.operands]))
        for o in callee.body.ops:
            e.block.append(o.clone(mapping))

    def copy(self, src, dst, loc):
        """dst[...] = src[...] over the whole shape."""
        from ...dialects.tir.ops import ForOp
        e = self.e
        e.at(dst.block)
        idx = []
        for d, n in enumerate(dst.type.shape):
            if n == 1:
                idx.append(e.const(0))
                continue
            loop = ForOp.create(0, n, name=f"i{d}", loc=loc)
            e.block.append(loop)
            e.at(loop.body)
            idx.append(loop.induction_var)
        v = e.op("tir.load", [src] + idx, [dst.type.element_type])
        e.op("tir.store", [v, dst] + idx, [])
        e.at(dst.block)

    def read(self, op, e):
        m = self.m
        buf = m.get(op.tensor, op.tensor)
        idx = [m.get(x, x) for x in op.indices]
        r = op.results[0]
        if not op.guarded:
            return e.op("tir.load", [buf] + idx, [r.type], name=r.name)
        c = m.get(op.condition, op.condition)
        # (an index left as it is keeps its address arithmetic simple: the
        # pixel of a concatenation's input is the same in both branches)
        safe = [i if _inside(i, n) else e.select(c, i, e.const(0)) for i, n in zip(idx, op.tensor.type.shape)]
        v = e.op("tir.load", [buf] + safe, [r.type])
        ev = op.attributes["else_value"]
        t = r.type
        other = e.const(ev if T.is_float(t) else int(ev), t)
        out = e.select(c, v, other)
        out.name = r.name
        return out


def _inside(v, n):
    """Is index `v` inside [0, n) for every value of the loops around it
    (a constant, or a range from tir.bounds)?  n None (a dynamic
    dimension): only the constant 0 is."""
    d = v.defining_op()
    if isinstance(d, ConstantOp):
        x = d.attributes["value"]
        return x == 0 if n is None else 0 <= x < n
    if not isinstance(n, int):
        return False
    from ...dialects.tir.bounds import Bounds
    lo, hi = Bounds().range(v)
    return lo is not None and hi is not None and 0 <= lo and hi < n


# the te ops lower-te-to-tir turns into tir; any other te op left is an error
_TE_MEMORY = (te.RealizeOp, te.ReadOp, te.WriteOp, te.IntrinOp, te.ReturnOp, te.ExternCallOp)
