"""Loop nests for scheduled stages (TVM's MakeLoopNest and MakeComputeStmt).

For a stage with leaves L0..Ln-1 (outer to inner)::

    tir.for L0 ... {                      kind from the schedule; extent-1 loops vanish
      [tir.if guard]                      after the last loop a guard depends on
      [producers attached at L0]          compute_at: their nests, local storage
      tir.for L1 ... {
        ...
          %x = <body, index args rebuilt from the leaves>
          te.write %x, %T[...]
    }}

Index arguments are rebuilt from the leaves through the relations: a split
parent is ``outer * inner_extent + inner``, fused axes are ``fused floordiv
inner_extent`` and ``fused floormod inner_extent``.  A split whose factor
does not divide its extent gets the guard ``parent < extent`` (also when
the parent is itself an inner part, so nothing is computed twice).

A reduction writes the identity first: the init nest goes right before the
first reduce leaf and loops over the spatial leaves after it (TVM's rule),
then the update ``T[i] = T[i] (+) body`` runs in the full nest.

A stage attached with compute_at gets the extents bound inference found
(bounds.py): its root index is ``base + r`` with r over [0, extent), it
writes a local ``te.realize`` of the region's shape, it is guarded where
the region may leave the tensor, and its consumer's reads are shifted by
the base.

A leaf with ``te.prefetch %B, %leaf {offset = N}`` starts each iteration by
prefetching the region of %B the stage reads in that iteration (bound
inference, as for compute_at) with the leaf's value moved on by N: one
``tir.prefetch`` per cache line along the last dimension, in loops over
the others.
"""

from __future__ import annotations

from ...dialects.te.builder import Emitter, combine_values, reducer_identity, reducer_identity_value
from ...dialects.arith.ops import ConstantOp
from ...dialects.te.ops import ARG_REDUCERS, ReadOp, YieldOp
from ...ir import types as T
from ...ir.core import Block, Region
from .bounds import Aff, IndexIntervals, Interval, Unbounded
from .schedule_state import Split

# the cache line a tir.prefetch brings in (x86 and most ARM cores)
PREFETCH_LINE_BYTES = 64
# the range bound analysis assumes for a loop whose extent is a run-time size
RUNTIME_EXTENT_MAX = 2 ** 40


def last_index(n):
    """The last index of an extent; for a run-time extent the bound above
    (a region that spans it has no static size: emit_attached refuses it)."""
    return n - 1 if isinstance(n, int) else RUNTIME_EXTENT_MAX


def union_regions(a, b):
    """Per dimension, the union of two regions (None: no region)."""
    if a is None or b is None:
        return a if b is None else b
    out = []
    for x, y in zip(a, b):
        u = x.union(y)
        if u is None:
            raise Unbounded("its reads differ by a loop-dependent offset")
        out.append(u)
    return out


class AttachCtx:
    """Where an attached stage's region lies in its full tensor."""

    __slots__ = ("bases", "base_affs", "extents", "need_lo", "need_hi")

    def __init__(self, bases, base_affs, extents, need_lo, need_hi):
        self.bases = bases            # per dimension: the region's first index (int or Value)
        self.base_affs = base_affs    # the same as affine forms, for the bounds of nested attaches
        self.extents = extents        # the region's shape: the stage's root extents here
        self.need_lo, self.need_hi = need_lo, need_hi   # may the region leave the tensor below / above?


class Guard:
    __slots__ = ("iv", "upper", "base", "lower", "pos", "reduce")

    def __init__(self, iv, upper=None, base=0, lower=False):
        self.iv, self.upper, self.base, self.lower = iv, upper, base, lower
        self.pos = -1
        self.reduce = iv.reduce


class NestBuilder:
    def __init__(self, block):
        self.e = Emitter(block, const_block=block)
        self.ranges = {}     # index Value -> static (lo, hi)
        self.remap = {}      # producer tensor -> (local storage, bases): reads are shifted
        self.attached = {}   # (consumer stage, leaf) -> [producer stages]
        self.buffers = {}    # stage -> storage it writes
        self.vals = {}       # argmax / argmin stage -> storage of the best value so far
        self.ext = {}        # stage -> {IterVar: extent}, while the stage is being emitted
        self.ctx = {}        # stage -> AttachCtx

    # -- relations -------------------------------------------------------------------

    def extents(self, st, root_extents):
        """Every axis' extent: an int, or an index Value for a symbolic one
        (a split of n by f has ``(n + f - 1) floordiv f`` outer iterations)."""
        e = self.e
        ext = dict(zip(st.root, root_extents))
        for rel in st.relations:
            if isinstance(rel, Split):
                n = ext[rel.parent]
                if isinstance(n, int):
                    ext[rel.outer], ext[rel.inner] = rel.extents(n)
                elif rel.factor is not None:
                    ext[rel.outer], ext[rel.inner] = e.floordiv(e.add(n, rel.factor - 1), rel.factor), rel.factor
                else:
                    inner = e.floordiv(e.add(n, rel.nparts - 1), rel.nparts)
                    ext[rel.outer], ext[rel.inner] = e.floordiv(e.add(n, e.sub(inner, 1)), inner), inner
            else:
                ext[rel.fused] = e.mul(ext[rel.outer], ext[rel.inner])
        return ext

    def deps(self, iv):
        """The leaves an axis' value is made from."""
        rel = iv.consumed_by
        if rel is None:
            return {iv}
        if isinstance(rel, Split):
            return self.deps(rel.outer) | self.deps(rel.inner)
        return self.deps(rel.fused)

    def value(self, st, iv):
        """The axis' value at the current point: an int or an index Value."""
        e = self.e
        key = ("iv", st, iv)
        v = e.lookup(key)
        if v is not None:
            return v
        rel = iv.consumed_by
        if rel is None:
            raise AssertionError(f"leaf {iv.name} of {st.name} used outside its loop")
        ext = self.ext[st]
        if isinstance(rel, Split):
            v = e.add(e.mul(self.value(st, rel.outer), ext[rel.inner]), self.value(st, rel.inner))
        else:
            f = self.value(st, rel.fused)
            n = ext[rel.inner]
            v = e.floordiv(f, n) if iv is rel.outer else e.floormod(f, n)
            if not isinstance(v, int) and isinstance(ext[iv], int):
                self.ranges[v] = (0, ext[iv] - 1)
        if not isinstance(v, int):
            e.remember(key, v)
        return v

    # -- emission ----------------------------------------------------------------------

    def open_loop(self, st, iv, extent):
        from ...dialects.tir.ops import ForOp
        e = self.e
        static = isinstance(extent, int)
        if static and extent == 1 and iv.kind != "thread":
            e.remember(("iv", st, iv), 0)
            return
        kind = iv.kind if not static or extent > 1 or iv.kind == "thread" else "serial"
        loop = ForOp.create(0, extent, kind, iv.thread, iv.name, e.loc, dict(iv.pragmas))
        e.block.append(loop)
        e.at(loop.body)
        v = loop.induction_var
        # a run-time extent: bounded by the largest index (what guards and bounds need)
        self.ranges[v] = (0, extent - 1) if static else (0, RUNTIME_EXTENT_MAX)
        e.remember(("iv", st, iv), v)

    def open_guard(self, st, g):
        from ...dialects.tir.ops import IfOp
        e = self.e
        v = e.add(self.value(st, g.iv), g.base)
        c = e.cmp("ge", v, 0) if g.lower else e.cmp("lt", v, g.upper)
        if c is True:
            return
        if c is False:   # never true: an empty then-block keeps the structure simple
            c = e.val(False)
        op = IfOp([c], [], {}, [Region([Block()])], e.loc)
        e.block.append(op)
        e.at(op.regions[0].blocks[0])

    def guards(self, st, ext, ctx):
        gs = []
        for rel in st.relations:
            if isinstance(rel, Split):
                n = ext[rel.parent]
                if not isinstance(n, int) or ext[rel.outer] * ext[rel.inner] != n:   # symbolic: a tail guard
                    gs.append(Guard(rel.parent, upper=n))
        if ctx is not None:
            dims = st.compute.tensor_type.shape
            for d, iv in enumerate(st.root[:st.compute.rank]):
                if ctx.need_lo[d]:
                    gs.append(Guard(iv, base=ctx.bases[d], lower=True))
                if ctx.need_hi[d]:
                    gs.append(Guard(iv, upper=dims[d] if dims[d] is not None else st.compute.shape[d],
                                    base=ctx.bases[d]))
        pos = {iv: p for p, iv in enumerate(st.leaves)}
        for g in gs:
            g.pos = max(pos[l] for l in self.deps(g.iv))
        return gs

    def emit_stage(self, st, ctx=None):
        e = self.e
        start = e.block
        saved_loc = e.loc
        e.loc = st.compute.loc
        c = st.compute
        root_ext = list(ctx.extents) + list(c.reduce_extents) if ctx else list(c.extents)
        ext = self.ext[st] = self.extents(st, root_ext)
        self.ctx[st] = ctx
        guards = self.guards(st, ext, ctx)
        leaves = st.leaves
        begin = next((p for p, iv in enumerate(leaves) if iv.reduce), None) if st.is_reduction else None
        for p, iv in enumerate(leaves):
            if p == begin:
                self.emit_init(st, p, guards)
            self.open_loop(st, iv, ext[iv])
            for g in guards:
                if g.pos == p:
                    self.open_guard(st, g)
            for prod in self.attached.get((st, iv), ()):
                self.emit_attached(prod, st, p)
            for tensor, offset, op in iv.prefetch:
                self.emit_prefetch(st, p, iv, tensor, offset, op)
        self.emit_body(st)
        e.at(start)
        e.loc = saved_loc

    def emit_init(self, st, p, guards):
        e = self.e
        saved = e.block
        init = [iv for iv in st.leaves[p:] if not iv.reduce]
        for iv in init:
            self.open_loop(st, iv, self.ext[st][iv])
            for g in guards:
                if not g.reduce and g.pos >= p and max(init.index(l) for l in self.deps(g.iv)
                                                       if l in init) == init.index(iv):
                    self.open_guard(st, g)
        c = st.compute
        t = c.tensor_type.element_type
        idx = [e.val(x) for x in self.write_index(st)]
        if c.reducer in ARG_REDUCERS:   # position 0, value the identity of max / min
            vt = c.yielded.type
            e.op("te.write", [e.const(reducer_identity(c.reducer[3:], vt), vt), self.vals[st]] + idx, [])
            e.op("te.write", [e.const(0, t), self.buffers[st]] + idx, [])
        else:
            e.op("te.write", [reducer_identity_value(e, c, t), self.buffers[st]] + idx, [])
        e.at(saved)

    def write_index(self, st):
        return [self.value(st, iv) for iv in st.root[:st.compute.rank]]

    def emit_body(self, st):
        e = self.e
        c = st.compute
        ctx = self.ctx[st]
        mapping = {}
        for d, (arg, iv) in enumerate(zip(c.body.args, st.root)):
            v = self.value(st, iv)
            if ctx is not None and d < c.rank:
                v = e.add(v, ctx.bases[d])
            mapping[arg] = e.val(v)
        for op in c.body.ops:
            if isinstance(op, YieldOp):
                break
            if isinstance(op, ConstantOp):   # hoisted to the function's entry, shared
                mapping[op.results[0]] = e.const(op.attributes["value"], op.results[0].type)
            elif isinstance(op, ReadOp) and op.tensor in self.remap:
                self.shifted_read(op, mapping)
            else:
                e.block.append(op.clone(mapping))
        y = c.yielded
        v = mapping.get(y, y)
        buf = self.buffers[st]
        idx = [e.val(x) for x in self.write_index(st)]
        if c.reducer in ARG_REDUCERS:
            self.arg_update(st, v, idx)
            return
        if st.is_reduction:
            acc = e.op("te.read", [buf] + idx, [v.type])
            v = combine_values(e, c, acc, v)
        e.op("te.write", [v, buf] + idx, [])

    def arg_update(self, st, v, idx):
        """argmax: take v at position p when ``v > best`` or ``v == best and
        p < pos``, so the first extreme one wins whatever the loop order."""
        e = self.e
        c = st.compute
        t = c.tensor_type.element_type
        pos = 0
        for iv, n in zip(st.root[c.rank:], c.reduce_extents):
            pos = e.add(e.mul(pos, n), self.value(st, iv))
        pos = e.cast(e.val(pos), t)
        best = e.op("te.read", [self.vals[st]] + idx, [v.type])
        cur = e.op("te.read", [self.buffers[st]] + idx, [t])
        better = e.cmp("gt" if c.reducer == "argmax" else "lt", v, best)
        tie = e.and_(e.cmp("eq", v, best), e.cmp("lt", pos, cur))
        take = e.op("arith.ori", [better, tie], [T.i1])
        e.op("te.write", [e.select(take, v, best), self.vals[st]] + idx, [])
        e.op("te.write", [e.select(take, pos, cur), self.buffers[st]] + idx, [])

    def shifted_read(self, op, mapping):
        e = self.e
        local, bases = self.remap[op.tensor]
        idx = [e.val(e.sub(mapping.get(i, i), b)) for i, b in zip(op.indices, bases)]
        guard = op.condition
        if guard is not None:
            r = e.op("te.read", [local] + idx + [mapping.get(guard, guard)], [op.results[0].type],
                     {"else_value": op.attributes["else_value"]})
        else:
            r = e.op("te.read", [local] + idx, [op.results[0].type])
        r.name = op.results[0].name
        mapping[op.results[0]] = r

    # -- compute_at ----------------------------------------------------------------------

    def emit_attached(self, prod, cons, p):
        """Emit `prod` inside `cons`'s loop at leaf position `p`."""
        e = self.e
        try:
            region = self.region(prod, cons, p)
        except Unbounded as ex:
            raise prod.attach_op.error(f"cannot bound the region of '{prod.name}' read by '{cons.name}': {ex}")
        except TypeError:   # an extent inside the attach loop is a run-time size
            region = None
        dims = prod.compute.tensor_type.shape

        def bounded(it):
            return isinstance(it.span, int) and it.span < RUNTIME_EXTENT_MAX

        def whole(d, it):   # a '?' dimension read over a run-time range: held whole
            return dims[d] is None and not bounded(it)
        if region is None or not all(whole(d, it) or bounded(it) for d, it in enumerate(region)):
            raise prod.attach_op.error(f"cannot compute '{prod.name}' at a loop of '{cons.name}': the region "
                                       "one iteration reads has a run-time size along a static dimension")
        affs, exts, need_lo, need_hi, sizes = [], [], [], [], []
        for d, it in enumerate(region):
            if whole(d, it):
                # the dimension's run-time size (te.realize's operand, tir.alloc's)
                affs.append(Aff(0))
                exts.append(prod.compute.shape[d])
                sizes.append(exts[-1])
                need_lo.append(False)
                need_hi.append(False)
                continue
            if dims[d] is not None and it.span + 1 >= dims[d]:
                it = Interval(Aff(0), dims[d] - 1)
            lo, hi = it.base.static_range(self.ranges)
            affs.append(it.base)
            exts.append(it.span + 1)
            need_lo.append(lo < 0)
            # a '?' dimension: a guard against its run-time size
            need_hi.append(dims[d] is None or hi + it.span > dims[d] - 1)
        bases = [a.emit(e) for a in affs]
        t = T.TensorType([x if isinstance(x, int) else None for x in exts], prod.compute.tensor_type.element_type)
        from .storage import realize_for
        r = realize_for(prod, t, e.loc, sizes=sizes)
        e.block.append(r)
        local = r.results[0]
        local.name = prod.name
        self.buffers[prod] = local
        if prod.compute.reducer in ARG_REDUCERS:
            vt = T.TensorType(t.shape, prod.compute.yielded.type)
            self.vals[prod] = e.op("te.realize", sizes, [vt], name=prod.name + "_val")
        self.remap[prod.compute.results[0]] = (local, bases)
        self.emit_stage(prod, AttachCtx(bases, affs, exts, need_lo, need_hi))

    def emit_prefetch(self, st, p, iv, tensor, offset, op):
        """tir.prefetch ops for what `st` reads of `tensor` in iteration
        iv + offset of its leaf at position p (module docstring)."""
        from ...dialects.tir.ops import ForOp
        e = self.e
        if tensor in self.remap:
            raise op.error("cannot prefetch a stage computed at a loop (compute_at): it is local storage")
        # a stage at the root reads as its te.realize by now
        tensor = next((b for s, b in self.buffers.items() if s.compute.results[0] is tensor), tensor)
        try:
            region = self.region(tensor, st, p)
        except Unbounded as ex:
            raise op.error(f"cannot bound the region of the tensor that '{st.name}' reads: {ex}")
        if region is None:
            raise op.error(f"'{st.name}' does not read the tensor to prefetch")
        v = e.lookup(("iv", st, iv))
        if not any(v is not None and it.base.terms.get(v) for it in region):
            raise op.error(f"'{st.name}' reads the same part of the tensor in every iteration of '{iv.name}': "
                           "nothing to prefetch ahead")
        per_line = max(1, PREFETCH_LINE_BYTES * 8 // tensor.type.element_type.bitwidth)
        bases = [it.base + Aff(it.base.terms.get(v, 0) * offset) for it in region]
        # a read's span past its dimension (an index a mutated modulus lets
        # grow to 2^32) prefetches no more than the dimension holds
        dims = tensor.type.shape
        spans = [min(it.span, dims[d] - 1) if type(dims[d]) is int else it.span for d, it in enumerate(region)]
        saved = e.block
        idx = []
        for d, it in enumerate(region[:-1]):
            if spans[d] == 0:
                idx.append(e.val(bases[d].emit(e)))
                continue
            loop = ForOp.create(0, spans[d] + 1, "serial", None, f"pf{d}", e.loc, {})
            e.block.append(loop)
            e.at(loop.body)
            idx.append(e.val(e.add(bases[d].emit(e), loop.induction_var)))
        for line in range(0, spans[-1] + 1, per_line):
            e.op("tir.prefetch", [tensor] + idx + [e.val(e.add(bases[-1].emit(e), line))], [])
        e.at(saved)

    def region(self, prod, cons, p):
        """Per dimension of `prod` (a stage, or any tensor), the Interval
        `cons` reads when its leaves up to position p are fixed: its own
        reads, and those of the stages attached to it at p or deeper (each
        over the whole region of it that `cons` reads there), so that a
        producer can be computed at an outer loop of its reader's
        consumer (a packed panel at the column loop of a cache_write), or
        at the loop where its readers are (softmax's max, read by the sum
        and the output, all at one row loop)."""
        c = cons.compute
        fixed = set(cons.leaves[:p + 1])
        ctx = self.ctx[cons]
        args = {}
        for d, (arg, iv) in enumerate(zip(c.body.args, cons.root)):
            it = self.root_interval(cons, iv, fixed)
            if ctx is not None and d < c.rank:
                it = Interval(ctx.base_affs[d], 0) + it
            args[arg] = it
        res = prod.compute.results[0] if hasattr(prod, "compute") else prod
        region = self.read_region(res, c, args)
        for leaf in cons.leaves[p:]:
            for mid in self.attached.get((cons, leaf), ()):
                m = mid.compute
                if mid is prod or not self.reads_under(mid, res):
                    continue
                over = self.region(mid, cons, p)
                margs = dict(zip(m.body.args, over + [Interval(Aff(0), last_index(n)) for n in m.reduce_extents]))
                region = union_regions(region, self.nested_read_region(res, mid, margs))
        return region

    def reads_under(self, st, res):
        """Whether stage `st`, or a stage computed at one of its loops
        (at any depth), reads tensor `res`."""
        if any(isinstance(op, ReadOp) and op.tensor is res for op in st.compute.body.ops):
            return True
        return any(self.reads_under(x, res) for leaf in st.leaves for x in self.attached.get((st, leaf), ()))

    def nested_read_region(self, res, st, args):
        """What stage `st` reads of `res` over `args`, and what the stages
        computed at its loops read (each over the whole region `st` reads
        of it): a producer computed at a loop two attachments out (the
        softmax's maxima at the query block, read by the weights computed
        inside the accumulator's key loop)."""
        region = self.read_region(res, st.compute, args)
        for leaf in st.leaves:
            for x in self.attached.get((st, leaf), ()):
                xres = x.compute.results[0]
                if xres is res or not self.reads_under(x, res):
                    continue
                over = self.read_region(xres, st.compute, args)
                if over is None:
                    continue
                xargs = dict(zip(x.compute.body.args,
                                 over + [Interval(Aff(0), last_index(n)) for n in x.compute.reduce_extents]))
                region = union_regions(region, self.nested_read_region(res, x, xargs))
        return region

    def read_region(self, res, c, args):
        """The union of the Intervals compute `c` reads of tensor `res`, its
        body arguments ranging over `args`; None where it reads none."""
        ii = IndexIntervals(args, self.e, self.ranges)
        region = None
        for op in c.body.ops:
            if isinstance(op, ReadOp) and op.tensor is res:
                region = union_regions(region, [ii.of(v) for v in op.indices])
        return region

    def static_range(self, st, iv):
        """(lo, hi) an axis' value can take, guards aside."""
        ext = self.ext[st]
        rel = iv.consumed_by
        if not isinstance(rel, Split):
            return 0, ext[iv] - 1
        (olo, ohi), (ilo, ihi) = self.static_range(st, rel.outer), self.static_range(st, rel.inner)
        n = ext[rel.inner]
        return olo * n + ilo, ohi * n + ihi

    def root_interval(self, st, iv, fixed):
        ext = self.ext[st]
        if self.deps(iv) <= fixed:
            v = self.value(st, iv)
            if not isinstance(v, int) and v not in self.ranges:
                self.ranges[v] = self.static_range(st, iv)
            return Interval.point(v)
        rel = iv.consumed_by
        if rel is None:
            return Interval(Aff(0), last_index(ext[iv]))
        if isinstance(rel, Split):
            return self.root_interval(st, rel.outer, fixed).scale(ext[rel.inner]) + \
                self.root_interval(st, rel.inner, fixed)
        return Interval(Aff(0), last_index(ext[iv]))
