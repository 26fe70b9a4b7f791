"""``te.create_schedule`` / ``Schedule`` / ``Stage``: classic TVM's schedule
API, recorded in Python and emitted as te schedule ops.

Each primitive is checked as it is called (the axis must be a current loop
of that stage, as TVM checks) and recorded; printing, ``tvm.lower`` and
``tvm.build`` emit a fresh ``te.func`` from the recording, so primitives may
be added after a schedule was printed.  What maps to what:

=====================================  ====================================================
``s[C].op.axis``, ``.reduce_axis``      ``%i, %j, %k = te.axes %C`` (emitted at first use)
``s[C].split(x, factor=f)``             ``%x.outer, %x.inner = te.split %x {factor = f}``
``s[C].split(x, nparts=p)``             ``te.split %x {nparts = p}``
``s[C].tile(x, y, xf, yf)``             ``te.tile %x, %y {x_factor, y_factor}`` (xo, yo, xi, yi)
``s[C].fuse(a, b, ...)``                ``%a.b.fused = te.fuse %a, %b``
``s[C].reorder(...)``                   ``te.reorder``
``vectorize / parallel / unroll``       ``te.vectorize / te.parallel / te.unroll``
``bind(x, te.thread_axis(tag))``        ``te.bind %x {thread = tag}``
``pragma(x, key, value)``               ``te.pragma %x {key = value}`` (value 1 when None)
``compute_at(s[D], x)``                 ``te.compute_at %C, %x``
``prefetch(B, k, offset)``              ``te.prefetch %B, %k {offset}``
``compute_inline()`` / ``compute_root``  ``te.compute_inline %C`` / ``te.compute_root %C``
``storage_align(ax, factor, offset)``   ``te.storage_align %C {axis, factor, offset}``
``double_buffer()`` / ``set_scope(s)``  ``te.double_buffer`` / ``te.set_scope``
``s.cache_read(A, scope, readers)``     ``%A.shared = te.cache_read %A, %R... {scope}``
``s.cache_write(C, scope)``             ``%C.local = te.cache_write %C {scope}``
``s.rfactor(C, k, factor_axis)``        ``%C.rf = te.rfactor %C, %k {factor_axis}``
=====================================  ====================================================

Not in the te dialect (a clear TVMError): ``tensorize``, ``env_threads``,
``set_store_predicate``, ``rolling_buffer``,
``transform_layout``, ``set_axis_separators``, ``Schedule.create_group``,
cache_write of several tensors.

Split factors are plain ints (AutoTVM's ``cfg["tile_x"].size`` values can be
passed straight in).  The SSA names are the user's: ``%A`` for a placeholder
named "A", ``%y.outer`` for a split of ``y`` (TVM's loop names), made unique
by the printer (``%i_1``).
"""

from __future__ import annotations

import linecache
import os
import sys

from .expr import TVMError
from .te import ComputeOp, IterVar, PlaceholderOp, Range, Tensor, _int

_HERE = os.path.dirname(os.path.abspath(__file__))


def _caller_loc():
    """The user's source line calling into this package (a FileLoc), so a
    diagnostic from --apply-schedule points at the Python call."""
    from ..ir.location import UNKNOWN, FileLoc
    f = sys._getframe(1)
    while f is not None and os.path.dirname(os.path.abspath(f.f_code.co_filename)) == _HERE:
        f = f.f_back
    if f is None:
        return UNKNOWN
    line = linecache.getline(f.f_code.co_filename, f.f_lineno)
    col = len(line) - len(line.lstrip()) + 1 if line.strip() else 1
    return FileLoc(f.f_code.co_filename, f.f_lineno, col)


def _ssa_name(name: str) -> str:
    import re
    s = re.sub(r"[^\w$.\-]", "_", name) or "t"
    return "_" + s if s[0].isdigit() else s


class _Action:
    __slots__ = ("kind", "stage", "operands", "results", "attrs", "loc", "extra")

    def __init__(self, kind, stage, operands=(), results=(), attrs=None, extra=None):
        self.kind, self.stage, self.operands, self.results = kind, stage, list(operands), list(results)
        self.attrs = dict(attrs or {})
        self.extra = extra
        self.loc = _caller_loc()


def _new_iv(extent, name, iter_type):
    return IterVar(Range(0, extent), name, iter_type)


def _factor(v, what):
    if v is None:
        return None
    n = _int(v, what)
    if n <= 0:
        raise TVMError(f"{what} must be positive, got {n}")
    return n


def _split_extents(extent, factor, nparts):
    if factor is not None:
        inner = min(factor, extent)
    else:
        inner = -(-extent // nparts)
    return -(-extent // inner), inner


class Stage:
    """``s[C]``: the loops of one stage and the primitives on them."""

    def __init__(self, schedule, op, kind="compute"):
        self.schedule = schedule
        self.origin_op = op
        self.kind = kind           # compute, cache_read, cache_write, rfactor
        self.inlined = False
        self.scheduled = False     # a loop primitive was applied
        self._set_op(op)

    def _set_op(self, op):
        # an op's axes may be shared by several schedules of it: the stage,
        # not the IterVar, knows which loops are its own
        self.op = op
        for iv in list(op.axis) + list(op.reduce_axis):
            iv.root_op = op
        self.schedule._op_stage[op] = self
        self.leaf_iter_vars = list(op.axis) + list(op.reduce_axis)
        self.all_iter_vars = getattr(self, "all_iter_vars", []) + list(self.leaf_iter_vars)
        self._consumed = getattr(self, "_consumed", {})

    @property
    def name(self):
        return self.op.name

    def __repr__(self):
        return f"stage({self.name}, {type(self.op).__name__})"

    # -- checks ------------------------------------------------------------------------

    def _leaf(self, iv, what):
        if not isinstance(iv, IterVar):
            raise TVMError(f"{what}: expected an axis (IterVar) of stage '{self.name}', got {iv!r}")
        pos = next((p for p, v in enumerate(self.leaf_iter_vars) if v is iv), None)
        if pos is None:
            if iv.iter_type == IterVar.ThreadIndex:
                raise TVMError(f"{what}: '{iv.name}' is a thread axis; bind a loop to it with "
                               f"s[{self.name}].bind(axis, thread)")
            owner = self.schedule._owner(iv)
            if owner is not self:
                where = f"stage '{owner.name}'" if owner is not None else "no stage of this schedule"
                raise TVMError(f"{what}: axis '{iv.name}' belongs to {where}, not to '{self.name}'")
            why = self._consumed.get(iv, "replaced")
            raise TVMError(f"{what}: axis '{iv.name}' of stage '{self.name}' was already {why} (stale "
                           "handle); use the axes that call returned")
        self._not_inlined(what)
        return pos

    def _not_inlined(self, what):
        if self.inlined:
            raise TVMError(f"{what}: stage '{self.name}' is inlined (compute_inline); it has no loops")

    def _record(self, kind, operands=(), results=(), attrs=None, extra=None, loop=True):
        a = _Action(kind, self, operands, results, attrs, extra)
        self.schedule._actions.append(a)
        if loop:
            self.scheduled = True
        return a

    # -- loop primitives -----------------------------------------------------------------

    def split(self, parent, factor=None, nparts=None):
        """``outer, inner = s[C].split(x, factor=f)`` (or ``nparts=p``): ``te.split``."""
        pos = self._leaf(parent, "split")
        if (factor is None) == (nparts is None):
            raise TVMError("split takes exactly one of factor= or nparts=")
        factor = _factor(factor, "split factor")
        nparts = _factor(nparts, "split nparts")
        oe, ie = _split_extents(parent.extent, factor, nparts)
        outer = _new_iv(oe, f"{parent.name}.outer", parent.iter_type)
        inner = _new_iv(ie, f"{parent.name}.inner", parent.iter_type)
        outer.split_of = inner.split_of = parent
        self.leaf_iter_vars[pos:pos + 1] = [outer, inner]
        self.all_iter_vars += [outer, inner]
        self._consumed[parent] = "split"
        attrs = {"factor": factor} if factor is not None else {"nparts": nparts}
        self._record("te.split", [parent], [outer, inner], attrs)
        return outer, inner

    def tile(self, x_parent, y_parent, x_factor, y_factor):
        """``xo, yo, xi, yi = s[C].tile(x, y, xf, yf)``: ``te.tile``."""
        self._leaf(x_parent, "tile")
        self._leaf(y_parent, "tile")
        if x_parent is y_parent:
            raise TVMError("tile: x and y are the same axis")
        xf, yf = _factor(x_factor, "tile x_factor"), _factor(y_factor, "tile y_factor")
        res = []
        for p, f in ((x_parent, xf), (y_parent, yf)):
            oe, ie = _split_extents(p.extent, f, None)
            o = _new_iv(oe, f"{p.name}.outer", p.iter_type)
            i = _new_iv(ie, f"{p.name}.inner", p.iter_type)
            o.split_of = i.split_of = p
            pos = self.leaf_iter_vars.index(p)
            self.leaf_iter_vars[pos:pos + 1] = [o, i]
            self._consumed[p] = "tiled"
            res.append((o, i))
        (xo, xi), (yo, yi) = res
        self._reorder_leaves([xo, yo, xi, yi])
        self.all_iter_vars += [xo, xi, yo, yi]
        self._record("te.tile", [x_parent, y_parent], [xo, yo, xi, yi], {"x_factor": xf, "y_factor": yf})
        return xo, yo, xi, yi

    def fuse(self, *args):
        """``f = s[C].fuse(a, b, ...)``: adjacent loops, outer first (``te.fuse``)."""
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        if not args:
            raise TVMError("fuse needs at least one axis")
        pos = [self._leaf(a, "fuse") for a in args]
        if len(args) == 1:
            return args[0]
        if pos != list(range(pos[0], pos[0] + len(pos))):
            raise TVMError(f"fuse: axes {', '.join(a.name for a in args)} of stage '{self.name}' are not adjacent "
                           f"loops in outer-to-inner order (the loop order is "
                           f"{', '.join(v.name for v in self.leaf_iter_vars)}); reorder them first")
        kinds = {a.iter_type for a in args}
        if len(kinds) > 1:
            raise TVMError("fuse: cannot fuse a spatial axis with a reduce axis")
        extent = 1
        for a in args:
            extent *= a.extent
        f = _new_iv(extent, ".".join(a.name for a in args) + ".fused", args[0].iter_type)
        self.leaf_iter_vars[pos[0]:pos[-1] + 1] = [f]
        self.all_iter_vars.append(f)
        for a in args:
            self._consumed[a] = "fused"
        self._record("te.fuse", args, [f])
        return f

    def _reorder_leaves(self, order):
        pos = sorted(self.leaf_iter_vars.index(a) for a in order)
        for p, a in zip(pos, order):
            self.leaf_iter_vars[p] = a

    def reorder(self, *args):
        """``s[C].reorder(a, b, ...)``: the named loops take their positions in this order."""
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        for a in args:
            self._leaf(a, "reorder")
        if len({id(a) for a in args}) != len(args):
            raise TVMError("reorder: an axis is listed twice")
        self._reorder_leaves(list(args))
        self._record("te.reorder", args)

    def _annotate(self, kind, iv, what):
        self._leaf(iv, what)
        if kind in ("te.vectorize", "te.parallel") and iv.iter_type == IterVar.CommReduce:
            raise TVMError(f"{what}: cannot {what} reduce axis '{iv.name}' of stage '{self.name}' "
                           f"(rfactor it first: s.rfactor)")
        self._record(kind, [iv])

    def vectorize(self, var):
        """``te.vectorize``."""
        self._annotate("te.vectorize", var, "vectorize")

    def parallel(self, var):
        """``te.parallel``."""
        self._annotate("te.parallel", var, "parallel")

    def unroll(self, var):
        """``te.unroll``."""
        self._annotate("te.unroll", var, "unroll")

    def bind(self, ivar, thread_ivar):
        """``s[C].bind(x, te.thread_axis("blockIdx.x"))``: ``te.bind %x {thread = ...}``."""
        self._leaf(ivar, "bind")
        if not isinstance(thread_ivar, IterVar) or thread_ivar.iter_type != IterVar.ThreadIndex:
            raise TVMError(f"bind: expected a te.thread_axis, got {thread_ivar!r}")
        if ivar.iter_type == IterVar.CommReduce:
            raise TVMError(f"bind: cannot bind reduce axis '{ivar.name}' to a thread; s.rfactor it first")
        self._record("te.bind", [ivar], attrs={"thread": thread_ivar.thread_tag})

    def pragma(self, var, pragma_type, pragma_value=None):
        """``te.pragma %x {pragma_type = value}`` (value 1 when none is given)."""
        self._leaf(var, "pragma")
        import re
        if not re.fullmatch(r"[A-Za-z_]\w*", str(pragma_type)):
            raise TVMError(f"pragma: the key must be an identifier, got {pragma_type!r}")
        if pragma_value is None:
            pragma_value = 1
        elif isinstance(pragma_value, bool) or not isinstance(pragma_value, (int, float, str)):
            if hasattr(pragma_value, "value"):
                pragma_value = pragma_value.value
            else:
                raise TVMError(f"pragma: the value must be an int, float or string, got {pragma_value!r}")
        self._record("te.pragma", [var], attrs={str(pragma_type): pragma_value})

    # -- attachment --------------------------------------------------------------------------

    def compute_at(self, parent, scope):
        """``s[C].compute_at(s[D], x)``: C's loops go inside loop x of D (``te.compute_at``)."""
        self._not_inlined("compute_at")
        if isinstance(parent, Tensor):
            parent = self.schedule[parent]
        if not isinstance(parent, Stage):
            raise TVMError(f"compute_at: expected a stage (s[D]), got {parent!r}")
        if parent is self:
            raise TVMError(f"compute_at: stage '{self.name}' cannot be computed at its own loop")
        parent._leaf(scope, "compute_at")
        self._record("te.compute_at", [scope], loop=False)

    def prefetch(self, tensor, var, offset):
        """``s[C].prefetch(B, k, offset)``: each iteration of loop k first
        prefetches what iteration k + offset reads of B (``te.prefetch``)."""
        self._leaf(var, "prefetch")
        if not isinstance(tensor, Tensor):
            raise TVMError(f"prefetch: expected a tensor, got {tensor!r}")
        if self.kind == "compute" and all(t is not tensor for t in self.origin_op.input_tensors):
            raise TVMError(f"prefetch: stage '{self.name}' does not read '{tensor.name}'")
        if hasattr(offset, "value"):
            offset = offset.value
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise TVMError(f"prefetch: the offset must be an integer, got {offset!r}")
        self._record("te.prefetch", [tensor, var], attrs={"offset": offset}, loop=False)

    def compute_inline(self):
        """``te.compute_inline``: the body replaces every read (not for outputs or reductions)."""
        if self.op.reduce_axis:
            raise TVMError(f"compute_inline: stage '{self.name}' is a reduction and cannot be inlined")
        if self.op in self.schedule.outputs:
            raise TVMError(f"compute_inline: stage '{self.name}' is an output and cannot be inlined")
        if self.scheduled:
            raise TVMError(f"compute_inline: stage '{self.name}' already has loop primitives applied")
        self.inlined = True
        self._record("te.compute_inline", loop=False)

    def compute_root(self):
        """``te.compute_root``: a loop nest of its own at the top (the default)."""
        self.inlined = False
        self._record("te.compute_root", loop=False)

    # -- storage -------------------------------------------------------------------------------

    def storage_align(self, axis, factor, offset):
        """``te.storage_align %C {axis = d, ...}``, d the dimension of `axis` in C's shape."""
        if not isinstance(axis, IterVar) or axis not in self.op.axis:
            raise TVMError(f"storage_align: expected a spatial axis of s[{self.name}].op.axis, got {axis!r}")
        self._record("te.storage_align", attrs={"axis": self.op.axis.index(axis),
                                                "factor": _int(factor, "storage_align factor"),
                                                "offset": _int(offset, "storage_align offset")}, loop=False)

    def double_buffer(self):
        """``te.double_buffer``."""
        self._record("te.double_buffer", loop=False)

    def set_scope(self, scope):
        """``te.set_scope {scope}``: global, shared or local."""
        if scope not in ("global", "shared", "local"):
            raise TVMError(f"set_scope: scope must be global, shared or local, got '{scope}'")
        self._record("te.set_scope", attrs={"scope": scope}, loop=False)

    # -- what the te dialect does not have ------------------------------------------------------

    def _unsupported(name, why):   # noqa: N805
        def f(self, *args, **kwargs):
            raise TVMError(f"Stage.{name} is not supported: {why}")
        f.__name__ = name
        return f

    tensorize = _unsupported("tensorize", "the te dialect has no tensorize op")
    env_threads = _unsupported("env_threads", "the te dialect has no env_threads op (bind each loop instead)")
    set_store_predicate = _unsupported("set_store_predicate", "the te dialect has no store predicate op")
    rolling_buffer = _unsupported("rolling_buffer", "the te dialect has no rolling_buffer op")
    transform_layout = _unsupported("transform_layout", "the te dialect has no transform_layout op")
    set_axis_separators = _unsupported("set_axis_separators", "the te dialect has no axis separators")
    del _unsupported


def _topo_computes(out_ops):
    """(compute ops in dependency order, placeholder ops in discovery order)."""
    order, placeholders, seen = [], [], set()

    def visit(op):
        stack = [(op, False)]
        while stack:
            o, done = stack.pop()
            if done:
                order.append(o)
                continue
            if id(o) in seen:
                continue
            seen.add(id(o))
            if isinstance(o, PlaceholderOp):
                placeholders.append(o)
                continue
            stack.append((o, True))
            for t in reversed(o.input_tensors):
                if id(t.op) not in seen:
                    stack.append((t.op, False))

    for op in out_ops:
        visit(op)
    return order, placeholders


class Schedule:
    """``te.create_schedule(C.op)``: ``s[C]`` is C's Stage; ``str(s)`` is the
    te.func text it emits (all placeholders as parameters, the outputs as
    results)."""

    def __init__(self, ops):
        if not isinstance(ops, (list, tuple)):
            ops = [ops]
        outs = []
        for o in ops:
            if isinstance(o, Tensor):
                o = o.op
            if not isinstance(o, ComputeOp):
                raise TVMError(f"create_schedule: expected compute operations (C.op), got {o!r}")
            outs.append(o)
        self.outputs = outs
        self._op_stage = {}     # every op version a stage had -> the stage
        computes, self._placeholders = _topo_computes(outs)
        self._computes = computes
        self.stages = [Stage(self, op) for op in computes]
        self.stage_map = {op: st for op, st in zip(computes, self.stages)}
        self._actions: list[_Action] = []

    def __getitem__(self, x):
        op = x.op if isinstance(x, Tensor) else x
        st = self.stage_map.get(op)
        if st is None:
            if isinstance(op, PlaceholderOp):
                raise TVMError(f"'{op.name}' is a placeholder: it has no stage to schedule "
                               f"(cache it with s.cache_read)")
            raise TVMError(f"'{getattr(op, 'name', op)}' is not part of this schedule")
        return st

    def _owner(self, iv):
        for st in self.stages:
            if any(v is iv for v in st.all_iter_vars):
                return st
        return None

    def __contains__(self, x):
        op = x.op if isinstance(x, Tensor) else x
        return op in self.stage_map

    def normalize(self):
        """A no-op: the te dialect's loops always start at 0."""
        return self

    def create_group(self, outputs, inputs, include_inputs=False):
        raise TVMError("Schedule.create_group is not supported: the te dialect has no stage groups")

    # -- stage ops ---------------------------------------------------------------------------

    def _add_stage(self, op, kind):
        st = Stage(self, op, kind)
        self.stages.append(st)
        self.stage_map[op] = st
        return st

    def cache_read(self, tensor, scope, readers):
        """``AS = s.cache_read(A, "shared", [C])``: ``te.cache_read``."""
        if scope not in ("global", "shared", "local"):
            raise TVMError(f"cache_read: scope must be global, shared or local, got '{scope}'")
        if not isinstance(tensor, Tensor):
            raise TVMError(f"cache_read: expected a tensor, got {tensor!r}")
        if not isinstance(tensor.op, PlaceholderOp):
            self[tensor]._not_inlined("cache_read")
        if not isinstance(readers, (list, tuple)):
            readers = [readers]
        if not readers:
            raise TVMError("cache_read: needs the stages that read the cache")
        rstages = [r if isinstance(r, Stage) else self[r] for r in readers]
        for r in rstages:
            if r.kind == "compute" and all(t is not tensor for t in r.origin_op.input_tensors):
                raise TVMError(f"cache_read: stage '{r.name}' does not read '{tensor.name}'")
        axis = [IterVar(Range(0, n), f"ax{d}", IterVar.DataPar) for d, n in enumerate(tensor.shape)]
        op = ComputeOp(f"{tensor.name}.{scope}", axis, [], tensor[tuple(axis)] if axis else 0, tensor.dtype)
        op.input_tensors = [tensor]
        st = self._add_stage(op, "cache_read")
        a = _Action("te.cache_read", st, [tensor] + rstages, attrs={"scope": scope})
        self._actions.append(a)
        return op.tensor

    def cache_write(self, tensor, scope):
        """``CL = s.cache_write(C, "local")``: ``te.cache_write``; C becomes a
        copy of CL (``s[C].op.axis`` are then the copy's axes)."""
        if isinstance(tensor, (list, tuple)):
            if len(tensor) != 1:
                raise TVMError("cache_write of several tensors is not supported by the te dialect")
            tensor = tensor[0]
        if scope not in ("global", "shared", "local"):
            raise TVMError(f"cache_write: scope must be global, shared or local, got '{scope}'")
        st = self[tensor]
        st._not_inlined("cache_write")
        if st.scheduled or any(a.stage is st and a.kind != "te.cache_read" for a in self._actions):
            raise TVMError(f"cache_write of '{st.name}' must come before the other schedule primitives on it")
        old = st.op
        cl_axis = [IterVar(Range(0, a.extent), a.name, IterVar.DataPar) for a in old.axis]
        cl_red = [IterVar(Range(0, k.extent), k.name, IterVar.CommReduce) for k in old.reduce_axis]
        cl = ComputeOp(f"{st.name}.{scope}", cl_axis, cl_red, 0, old.dtype)
        cl.input_tensors = list(old.input_tensors)
        new_axis = [IterVar(Range(0, a.extent), a.name, IterVar.DataPar) for a in old.axis]
        copy = ComputeOp(st.name, new_axis, [], cl.tensor[tuple(new_axis)], old.dtype)
        for iv in st.all_iter_vars:
            st._consumed[iv] = "replaced by s.cache_write (use s[C].op.axis again)"
        st._set_op(copy)
        cst = self._add_stage(cl, "cache_write")
        self._actions.append(_Action("te.cache_write", cst, [st], attrs={"scope": scope}))
        return cl.tensor

    def rfactor(self, tensor, axis, factor_axis=0):
        """``CF = s.rfactor(C, k)``: ``te.rfactor``; CF holds the partial
        reductions over k (a reduce axis of C, or one part of a split of one)."""
        st = self[tensor]
        old = st.op
        if not old.reduce_axis:
            raise TVMError(f"rfactor: '{st.name}' is not a reduction")
        st._leaf(axis, "rfactor")
        root = getattr(axis, "split_of", None)
        if root is None:
            root = axis
        if root not in old.reduce_axis:
            raise TVMError(f"rfactor: axis '{axis.name}' of '{st.name}' is not a reduce axis (or one part of a "
                           "split of one)")
        rank = len(old.axis)
        fa = _int(factor_axis, "rfactor factor_axis")
        if not 0 <= fa <= rank:
            raise TVMError(f"rfactor: factor_axis must be in [0, {rank}], got {fa}")
        sp = [IterVar(Range(0, a.extent), a.name, IterVar.DataPar) for a in old.axis]
        sp.insert(fa, IterVar(Range(0, axis.extent), axis.name, IterVar.DataPar))
        red = [IterVar(Range(0, k.extent), k.name, IterVar.CommReduce) for k in old.reduce_axis if k is not root]
        if root is not axis:
            other = next(v for v in st.all_iter_vars if getattr(v, "split_of", None) is root and v is not axis)
            red.append(IterVar(Range(0, other.extent), other.name, IterVar.CommReduce))
        cf = ComputeOp(f"{st.name}.rf", sp, red, 0, old.dtype, combiner=old.combiner)
        cf.input_tensors = list(old.input_tensors)
        new_axis = [IterVar(Range(0, a.extent), a.name, IterVar.DataPar) for a in old.axis]
        new_red = [IterVar(Range(0, axis.extent), axis.name, IterVar.CommReduce)]
        idx = list(new_axis)
        idx.insert(fa, new_red[0])
        nc = ComputeOp(st.name, new_axis, new_red, cf.tensor[tuple(idx)], old.dtype, combiner=old.combiner)
        for iv in st.all_iter_vars:
            st._consumed[iv] = "consumed by s.rfactor (use s[C].op.axis again)"
        st._set_op(nc)
        cst = self._add_stage(cf, "rfactor")
        self._actions.append(_Action("te.rfactor", cst, [st, axis], attrs={"factor_axis": fa}))
        return cf.tensor

    # -- emission ------------------------------------------------------------------------------

    def _signature(self, args):
        """(placeholder ops as parameters, compute ops as results), from args."""
        if args is None:
            return list(self._placeholders), list(self.outputs)
        params, results = [], []
        for a in args:
            if not isinstance(a, Tensor):
                raise TVMError(f"args: expected tensors (placeholders and outputs), got {a!r}")
            if isinstance(a.op, PlaceholderOp):
                params.append(a.op)
            elif a.op in self._computes:
                results.append(a.op)
            else:
                raise TVMError(f"args: tensor '{a.name}' is not a placeholder or a compute of this schedule")
        for p in self._placeholders:
            if p not in params:
                raise TVMError(f"placeholder '{p.name}' is used by the schedule but not in args")
        for o in self.outputs:
            if o not in results:
                raise TVMError(f"output '{o.name}' of the schedule is not in args")
        return params, results

    def emit(self, args=None, name="main"):
        """A ``builtin.module`` holding ``te.func @name`` (and any
        ``te.reducer``), verified; see :func:`emit_module`."""
        return emit_module(self, args, name)

    def __str__(self):
        from ..ir.printer import print_module
        return print_module(self.emit())

    def __repr__(self):
        return f"Schedule({', '.join(o.name for o in self.outputs)})"


def create_schedule(ops):
    """``te.create_schedule(C.op)`` or ``te.create_schedule([C.op, D.op])``."""
    return Schedule(ops)


def emit_module(s: Schedule, args=None, name="main"):
    from ..dialects.builtin.ops import ModuleOp
    from ..dialects.te.builder import Emitter, compute as te_compute
    from ..dialects.te.ops import FuncOp, ReturnOp
    from ..dialects.te.schedule_ops import AXIS
    from ..ir import types as T
    from ..ir.attributes import SymbolRef
    from ..ir.core import Block, Region
    from ..ir.location import UNKNOWN
    from ..ir.registry import get_op_class
    from ..ir.verifier import verify
    from .emit import BodyEmitter, mlir_type

    params, results = s._signature(args)
    m = ModuleOp.create_empty()
    body = Block([T.TensorType(p.shape, mlir_type(p.dtype)) for p in params],
                 [_ssa_name(p.name) for p in params])
    tensors = dict(zip(params, body.args))
    e = Emitter(body, UNKNOWN)
    reducers = {}

    def reducer_ref(combiner, dtype):
        if combiner.builtin is not None:
            return combiner.builtin
        key = (id(combiner), dtype)
        if key not in reducers:
            reducers[key] = _emit_reducer(m, combiner, dtype, len(reducers))
        return SymbolRef(reducers[key])

    for op in s._computes:
        _emit_compute(e, op, tensors, reducer_ref, te_compute, BodyEmitter, mlir_type)

    handles = {}
    stage_value = {st: tensors[st.origin_op] for st in s.stages if st.origin_op in tensors}

    def sched_op(opname, operands, n_results=0, names=(), attrs=None, loc=UNKNOWN):
        op = get_op_class(opname)(list(operands), [AXIS] * n_results, dict(attrs or {}), (), loc)
        body.append(op)
        for r, nm in zip(op.results, names):
            r.name = _ssa_name(nm)
        return op.results

    def stage_op(opname, operands, result_type, rname, attrs, loc):
        op = get_op_class(opname)(list(operands), [result_type], dict(attrs), (), loc)
        body.append(op)
        op.results[0].name = _ssa_name(rname)
        return op.results[0]

    def handle(iv, loc):
        h = handles.get(iv)
        if h is None:
            root_op = iv.root_op
            st = s._op_stage.get(root_op)
            if root_op is None or st is None:
                raise TVMError(f"axis '{iv.name}' has no loop handle (internal error)")
            ivs = list(root_op.axis) + list(root_op.reduce_axis)
            rs = sched_op("te.axes", [stage_value[st]], len(ivs), [v.name for v in ivs], loc=loc)
            handles.update(zip(ivs, rs))
            h = handles[iv]
        return h

    for a in s._actions:
        st, loc, k = a.stage, a.loc, a.kind
        if k == "te.cache_read":
            t, *readers = a.operands
            src = tensors[t.op] if t.op in tensors else stage_value[s[t]]
            v = stage_op(k, [src] + [stage_value[r] for r in readers], src.type, st.name, a.attrs, loc)
            stage_value[st] = v
        elif k == "te.cache_write":
            (src,) = a.operands
            v = stage_op(k, [stage_value[src]], stage_value[src].type, st.name, a.attrs, loc)
            stage_value[st] = v
        elif k == "te.rfactor":
            src, axis = a.operands
            h = handle(axis, loc)
            t = T.TensorType(st.op.shape, stage_value[src].type.element_type)
            v = stage_op(k, [stage_value[src], h], t, st.name, a.attrs, loc)
            stage_value[st] = v
        elif k in ("te.compute_inline", "te.compute_root", "te.storage_align", "te.double_buffer",
                   "te.set_scope"):
            sched_op(k, [stage_value[st]], attrs=a.attrs, loc=loc)
        elif k == "te.compute_at":
            sched_op(k, [stage_value[st], handle(a.operands[0], loc)], loc=loc)
        elif k == "te.prefetch":
            t, iv = a.operands
            src = tensors[t.op] if t.op in tensors else stage_value[s[t]]
            sched_op(k, [src, handle(iv, loc)], attrs=a.attrs, loc=loc)
        else:
            hs = [handle(iv, loc) for iv in a.operands]
            rs = sched_op(k, hs, len(a.results), [iv.name for iv in a.results], a.attrs, loc)
            handles.update(zip(a.results, rs))

    outs = [tensors[o] for o in results]
    body.append(ReturnOp(outs, [], {}, (), UNKNOWN))
    ft = T.FunctionType([a.type for a in body.args], [v.type for v in outs])
    func = FuncOp((), (), {"sym_name": _ssa_name(name), "function_type": ft}, [Region([body])], UNKNOWN)
    m.body.append(func)
    try:
        verify(m)
    except Exception as ex:
        from ..ir.diagnostics import DiagnosticError
        if isinstance(ex, DiagnosticError):
            raise TVMError(f"the emitted te.func does not verify: {ex}") from None
        raise
    return m


def _emit_compute(e, op, tensors, reducer_ref, te_compute, BodyEmitter, mlir_type):
    from ..ir import types as T
    from ..ir.core import Value
    elt = mlir_type(op.dtype)
    rank = len(op.axis)
    reduce = [(_ssa_name(k.name), k.dom.extent) for k in op.reduce_axis]
    reducer = reducer_ref(op.combiner, op.dtype) if op.reduce_axis else None

    def fcompute(e, *args):
        env = {}
        for iv, a in zip(op.axis, args[:rank]):
            env[iv] = a
        for k, a in zip(op.reduce_axis, args[rank:]):
            env[k] = e.add(a, k.dom.min) if k.dom.min else a
        be = BodyEmitter(e, env, tensors)
        v = be.as_type(be.emit(op.body[0]), elt)
        if op.where is not None:
            c = be.emit(op.where)
            ident = _identity(op.combiner, op.dtype)
            if c is not True:
                iv_ = be.as_type(be.emit(ident), elt)
                v = e.select(c if isinstance(c, Value) else bool(c), v, iv_)
        return v

    tt = T.TensorType(op.shape, elt)
    v = te_compute(e, tt, fcompute, reduce=reduce, reducer=reducer,
                   names=[_ssa_name(a.name) for a in op.axis], name=_ssa_name(op.name))
    tensors[op] = v


def _identity(combiner, dtype):
    from . import te
    if combiner.builtin == "sum":
        return te.const(0, dtype)
    if combiner.builtin == "prod":
        return te.const(1, dtype)
    if combiner.builtin == "max":
        return te.min_value(dtype)
    if combiner.builtin == "min":
        return te.max_value(dtype)
    from .expr import convert
    return convert(combiner.fidentity(dtype), dtype)


def _emit_reducer(module, combiner, dtype, n):
    """A module-level ``te.reducer @name(%acc: T, %x: T) identity c { ... }``."""
    from ..dialects.te.builder import Emitter
    from ..dialects.te.ops import ReducerOp, YieldOp
    from ..ir.core import Block, Region
    from ..ir.location import UNKNOWN
    from .emit import BodyEmitter, mlir_type
    from .expr import Const, Var, convert
    t = mlir_type(dtype)
    ident = convert(combiner.fidentity(dtype), dtype)
    if not isinstance(ident, Const):
        raise TVMError(f"comm_reducer '{combiner.name}': the identity must be a constant, got {ident!r}")
    x, y = Var("acc", dtype), Var("x", dtype)
    res = convert(combiner.fcombine(x, y), dtype)
    blk = Block([t, t], ["acc", "x"])
    be = BodyEmitter(Emitter(blk, UNKNOWN), {x: blk.args[0], y: blk.args[1]}, {})
    v = be.as_type(be.emit(res), t)
    blk.append(YieldOp([v], [], {}, (), UNKNOWN))
    name = f"{combiner.name}_{n}" if n else combiner.name
    value = float(ident.value) if ident.dtype.startswith(("float", "bfloat")) else int(ident.value)
    op = ReducerOp((), (), {"sym_name": name, "identity": value}, [Region([blk])], UNKNOWN)
    module.body.append(op)
    return name
