"""Reading a te.func's schedule ops into stages (TVM's Stage and IterVar).

Each te.compute is a :class:`Stage` with root axes (spatial, then reduce)
and a leaf order.  Schedule ops run in program order:

* ``te.axes`` binds handles to the root axes;
* ``te.split`` replaces a leaf by (outer, inner), ``te.fuse`` adjacent leaves
  by one, ``te.tile`` is two splits and a reorder, ``te.reorder`` permutes
  the named leaves among their own positions (TVM's rule);
* loop kinds (parallel, vectorized, unrolled, thread) and pragmas mark
  leaves; ``te.annotate`` names the kind by a value (AutoTVM's annotate knob);
* compute_inline / compute_root / compute_at set where a stage goes;
* ``te.prefetch`` asks a leaf's loop to prefetch a tensor (loop_nest.py);
* set_scope / storage_align / double_buffer describe its buffer (storage.py).

Stage ops (cache_read, cache_write, rfactor) were carried out before
(stage_rewrite.py).

Relations are symbolic (a factor, not extents), so a stage attached with
compute_at can get its extents later from bound inference.  Every illegal
request is a diagnostic at the schedule op.
"""

from __future__ import annotations

from ...dialects.te import schedule_ops as S
from ...dialects.te.ops import ComputeOp
from ...ir.attributes import DialectAttr
from ...ir.types import index_error

THREAD_KIND = "thread"


class IterVar:
    __slots__ = ("name", "reduce", "kind", "thread", "pragmas", "prefetch", "made_by", "consumed_by", "root_index")

    def __init__(self, name, reduce, made_by=None, root_index=None):
        self.name = name
        self.reduce = reduce
        self.kind = "serial"
        self.thread = None
        self.pragmas = {}
        self.prefetch = []              # (tensor, offset, te.prefetch op) for the loop's top
        self.made_by = made_by          # the relation that created it (None for a root axis)
        self.consumed_by = None         # the relation that split or fused it
        self.root_index = root_index

    def __repr__(self):
        return f"IterVar({self.name})"


class Split:
    __slots__ = ("parent", "outer", "inner", "factor", "nparts", "op")

    def __init__(self, parent, factor, nparts, op):
        self.parent, self.factor, self.nparts, self.op = parent, factor, nparts, op
        self.outer = IterVar(parent.name + ".outer", parent.reduce, self)
        self.inner = IterVar(parent.name + ".inner", parent.reduce, self)
        parent.consumed_by = self

    def extents(self, e):
        """(outer, inner) extents for a parent of extent `e`."""
        if self.factor is not None:
            f = self.factor
            if f >= e:
                return 1, e
            return -(-e // f), f
        inner = -(-e // self.nparts)
        return -(-e // inner), inner


class Fuse:
    __slots__ = ("outer", "inner", "fused", "op")

    def __init__(self, outer, inner, op):
        self.outer, self.inner, self.op = outer, inner, op
        self.fused = IterVar(f"{outer.name}.{inner.name}.fused", outer.reduce, self)
        outer.consumed_by = inner.consumed_by = self


class Stage:
    __slots__ = ("compute", "root", "leaves", "relations", "attach", "attach_op", "inline_op", "name",
                 "scope", "align", "double_buffer", "storage_ops")

    def __init__(self, compute):
        self.compute = compute
        rank = compute.rank
        self.name = compute.results[0].name or "compute"
        self.root = [IterVar(a.name or (f"i{k}" if k < rank else f"k{k - rank}"), k >= rank, None, k)
                     for k, a in enumerate(compute.body.args)]
        self.leaves = list(self.root)
        self.relations = []
        self.attach = "root"            # "root", "inline", or (stage, IterVar) for compute_at
        self.attach_op = None
        self.inline_op = None
        self.scope = None               # memory scope of its buffer (set_scope, cache_*)
        self.align = None               # (axis, factor, offset) from storage_align
        self.double_buffer = False
        self.storage_ops = []           # the ops that set the three above, for diagnostics

    @property
    def is_reduction(self):
        return self.compute.reducer is not None

    def __repr__(self):
        return f"Stage({self.name})"


def int_attr(op, key):
    """An integer attribute; an uninstantiated tuning knob is an error."""
    v = op.attributes.get(key)
    if isinstance(v, DialectAttr):
        if v.name.startswith("tune.") and v.params and isinstance(v.params[0], str):
            raise op.error(f"knob '{v.params[0]}' has no value: put a number in its place, or let "
                           f"--apply-schedule give the template its defaults (autotvm/space.py)")
        raise op.error(f"'{key}' must be an integer, got #{v.name}")
    if isinstance(v, int) and (msg := index_error(v, f"'{key}'")):
        raise op.error(msg)   # it becomes an index constant
    return v


class Schedule:
    """Stages of one te.func, and the schedule ops read into them."""

    def __init__(self, func):
        self.func = func
        self.stages = []
        self.by_value = {}      # compute result -> Stage
        self.handles = {}       # !te.axis value -> (Stage, IterVar)
        self.ops = []           # schedule ops read, to erase
        self.outputs = set(func.return_op.operands)

    def stage_of(self, op, value) -> Stage:
        st = self.by_value.get(value)
        if st is None:
            raise op.error("expects a stage (the result of a te.compute in this function)")
        return st

    def read(self):
        for op in self.func.body.ops:
            if isinstance(op, ComputeOp):
                st = Stage(op)
                self.stages.append(st)
                self.by_value[op.results[0]] = st
            elif isinstance(op, S.ScheduleOp):
                self.ops.append(op)
                _APPLY[type(op)](self, op)   # stage ops are rewritten away before this
        return self

    # -- handles -----------------------------------------------------------------

    def handle(self, op, value):
        h = self.handles.get(value)
        if h is None:
            raise op.error("axis handle was not made by a schedule op of this function")
        return h

    def leaf(self, op, value):
        """The stage and leaf axis a handle names; a stale handle is an error."""
        st, iv = self.handle(op, value)
        if st.attach == "inline":
            raise op.error(f"stage '{st.name}' is inlined (compute_inline), it has no loops to schedule",
                           notes=[(st.inline_op.loc, "inlined here")])
        rel = iv.consumed_by
        if rel is not None:
            what = "split" if isinstance(rel, Split) else "fused"
            raise op.error(f"axis '{iv.name}' was already {what}; use the axes that op returned (stale handle)",
                           notes=[(rel.op.loc, f"{what} here")])
        return st, iv

    def leaves_of_one_stage(self, op, values):
        pairs = [self.leaf(op, v) for v in values]
        st = pairs[0][0]
        if any(s is not st for s, _ in pairs):
            raise op.error("axes belong to different stages")
        ivs = [iv for _, iv in pairs]
        for k, iv in enumerate(ivs):
            if iv in ivs[:k]:   # tile %j, %j / reorder %i, %i: each axis once
                raise op.error(f"axis '{iv.name}' is given more than once")
        return st, ivs

    # -- the ops -------------------------------------------------------------------

    def _axes(self, op):
        st = self.stage_of(op, op.operands[0])
        for r, iv in zip(op.results, st.root):
            self.handles[r] = (st, iv)

    def _split(self, op):
        st, iv = self.leaf(op, op.operands[0])
        self.split(op, st, iv, int_attr(op, "factor"), int_attr(op, "nparts"), op.results)

    def split(self, op, st, iv, factor, nparts, results):
        if iv.prefetch:
            raise op.error(f"cannot split axis '{iv.name}': it prefetches (te.prefetch); split first",
                           notes=[(iv.prefetch[0][2].loc, "prefetch here")])
        n = factor if factor is not None else nparts
        if n <= 0:
            raise op.error(f"split {'factor' if factor is not None else 'nparts'} must be positive, got {n}")
        rel = Split(iv, factor, nparts, op)
        st.relations.append(rel)
        i = st.leaves.index(iv)
        st.leaves[i:i + 1] = [rel.outer, rel.inner]
        for r, x in zip(results, (rel.outer, rel.inner)):
            self.handles[r] = (st, x)
        return rel

    def _tile(self, op):
        st, (x, y) = self.leaves_of_one_stage(op, op.operands)
        xr = self.split(op, st, x, int_attr(op, "x_factor"), None, ())
        yr = self.split(op, st, y, int_attr(op, "y_factor"), None, ())
        ivs = [xr.outer, yr.outer, xr.inner, yr.inner]
        self.reorder(op, st, ivs)
        for r, iv in zip(op.results, ivs):
            self.handles[r] = (st, iv)

    def _fuse(self, op):
        st, ivs = self.leaves_of_one_stage(op, op.operands)
        pos = [st.leaves.index(iv) for iv in ivs]
        if any(b != a + 1 for a, b in zip(pos, pos[1:])):
            order = ", ".join(iv.name for iv in st.leaves)
            raise op.error(f"cannot fuse {', '.join(repr(iv.name) for iv in ivs)}: fused axes must be adjacent "
                           f"in the loop order, outer first (loop order: {order})")
        if len({iv.reduce for iv in ivs}) != 1:
            raise op.error("cannot fuse a spatial axis with a reduce axis")
        for iv in ivs:
            if iv.kind != "serial" or iv.pragmas or iv.prefetch:
                raise op.error(f"cannot fuse axis '{iv.name}': it is already annotated ({iv.kind})")
        cur = ivs[0]
        for nxt in ivs[1:]:   # n-ary fuse: a chain of binary ones, outermost first
            rel = Fuse(cur, nxt, op)
            st.relations.append(rel)
            i = st.leaves.index(cur)
            st.leaves[i:i + 2] = [rel.fused]
            cur = rel.fused
        cur.name = ".".join(iv.name for iv in ivs) + ".fused"
        self.handles[op.results[0]] = (st, cur)

    def _reorder(self, op):
        perm = op.attributes.get("perm")
        if isinstance(perm, DialectAttr):
            int_attr(op, "perm")   # an uninstantiated knob: the error
        st, ivs = self.leaves_of_one_stage(op, op.ordered())
        self.reorder(op, st, ivs)

    def reorder(self, op, st, ivs):
        pos = sorted(st.leaves.index(iv) for iv in ivs)
        for p, iv in zip(pos, ivs):
            st.leaves[p] = iv

    def _annotate(self, op, kind, thread=None):
        st, iv = self.leaf(op, op.operands[0])
        if iv.reduce and kind in ("vectorized", "parallel", THREAD_KIND):
            verb = {"vectorized": "vectorize", "parallel": "parallelize", THREAD_KIND: "bind"}[kind]
            raise op.error(f"cannot {verb} reduce axis '{iv.name}'"
                           + (" to a thread" if kind == THREAD_KIND else "")
                           + "; te.rfactor it first and schedule the factored stage's new spatial axis")
        if iv.kind != "serial" and (iv.kind, iv.thread) != (kind, thread):
            now = iv.kind if iv.kind != THREAD_KIND else f"bound to {iv.thread}"
            raise op.error(f"axis '{iv.name}' is already {now}")
        if kind == THREAD_KIND and thread != "vthread":
            other = next((x for x in st.leaves if x is not iv and x.thread == thread), None)
            if other is not None:   # one loop per thread index in a stage
                raise op.error(f"{thread} is already bound to axis '{other.name}' of '{st.name}'")
        iv.kind, iv.thread = kind, thread

    def _parallel(self, op):
        self._annotate(op, "parallel")

    def _vectorize(self, op):
        self._annotate(op, "vectorized")

    def _unroll(self, op):
        self._annotate(op, "unrolled")

    def _bind(self, op):
        self._annotate(op, THREAD_KIND, op.attributes["thread"])

    def _annotate_kind(self, op):
        kind = op.attributes["kind"]
        if isinstance(kind, DialectAttr):
            int_attr(op, "kind")   # an uninstantiated knob: the error
        if kind == "none":
            self.leaf(op, op.operands[0])   # still a live axis
        elif kind.startswith("bind:"):
            self._annotate(op, THREAD_KIND, kind[5:])
        else:
            self._annotate(op, {"unroll": "unrolled", "vectorize": "vectorized", "parallel": "parallel"}[kind])

    def _pragma(self, op):
        st, iv = self.leaf(op, op.operands[0])
        for k, v in op.attributes.items():
            if isinstance(v, DialectAttr):
                v = int_attr(op, k)
            iv.pragmas["pragma_" + k] = v

    def _prefetch(self, op):
        from ...dialects.te.ops import ReadOp
        tensor = op.operands[0]
        st, iv = self.leaf(op, op.operands[1])
        offset = int_attr(op, "offset")
        if not any(isinstance(r, ReadOp) and r.tensor is tensor for r in st.compute.body.ops):
            raise op.error(f"stage '{st.name}' does not read the tensor it is asked to prefetch")
        iv.prefetch.append((tensor, offset, op))

    def _compute_inline(self, op):
        st = self.stage_of(op, op.operands[0])
        if st.compute.results[0] in self.outputs:
            raise op.error(f"cannot inline '{st.name}': it is an output of the function")
        if st.is_reduction:
            raise op.error(f"cannot inline '{st.name}': it is a reduction")
        st.attach, st.inline_op = "inline", op

    def _compute_root(self, op):
        st = self.stage_of(op, op.operands[0])
        st.attach, st.attach_op = "root", op

    def _set_scope(self, op):
        st = self.stage_of(op, op.operands[0])
        if st.compute.results[0] in self.outputs and op.attributes["scope"] != "global":
            raise op.error(f"'{st.name}' is an output of the function: its buffer is global")
        st.scope = op.attributes["scope"]
        st.storage_ops.append(op)

    def _storage_align(self, op):
        st = self.stage_of(op, op.operands[0])
        axis, factor, offset = (int_attr(op, k) for k in ("axis", "factor", "offset"))
        rank = st.compute.rank
        if st.compute.results[0] in self.outputs:
            raise op.error(f"cannot pad '{st.name}': it is an output of the function")
        if not 0 <= axis < rank - 1:
            raise op.error(f"storage_align axis must be in [0, {rank - 1}) (the innermost dimension has stride 1), "
                           f"got {axis}")
        if factor <= 0 or not 0 <= offset < factor:
            raise op.error(f"storage_align needs factor > 0 and 0 <= offset < factor, got {factor}, {offset}")
        st.align = (axis, factor, offset)
        st.storage_ops.append(op)

    def _double_buffer(self, op):
        st = self.stage_of(op, op.operands[0])
        if st.compute.results[0] in self.outputs:
            raise op.error(f"cannot double-buffer '{st.name}': it is an output of the function")
        st.double_buffer = True
        st.storage_ops.append(op)

    def _compute_at(self, op):
        st = self.stage_of(op, op.operands[0])
        target, iv = self.handle(op, op.operands[1])
        if target is st:
            raise op.error(f"cannot compute '{st.name}' at one of its own axes")
        if st.compute.results[0] in self.outputs:
            raise op.error(f"cannot compute_at '{st.name}': it is an output of the function")
        st.attach, st.attach_op = (target, iv), op


# schedule op class -> the Schedule method that records it
_APPLY = {
    S.AxesOp: Schedule._axes, S.SplitOp: Schedule._split, S.TileOp: Schedule._tile, S.FuseOp: Schedule._fuse,
    S.ReorderOp: Schedule._reorder, S.ParallelOp: Schedule._parallel, S.VectorizeOp: Schedule._vectorize,
    S.UnrollOp: Schedule._unroll, S.BindOp: Schedule._bind, S.AnnotateOp: Schedule._annotate_kind,
    S.PragmaOp: Schedule._pragma, S.PrefetchOp: Schedule._prefetch,
    S.ComputeInlineOp: Schedule._compute_inline, S.ComputeRootOp: Schedule._compute_root,
    S.SetScopeOp: Schedule._set_scope, S.StorageAlignOp: Schedule._storage_align,
    S.DoubleBufferOp: Schedule._double_buffer, S.ComputeAtOp: Schedule._compute_at,
}
