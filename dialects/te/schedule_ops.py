"""Schedule ops, in the style of MLIR's transform dialect.

They sit in a te.func after the computes and act on handles of type
``!te.axis`` (one per loop of a stage); ``--apply-schedule`` carries them
out and erases them::

    %i, %j, %k = te.axes %D                  spatial then reduce axes of stage %D
    %jo, %ji = te.split %j {factor = 16}     or {nparts = 4}
    %xo, %yo, %xi, %yi = te.tile %x, %y {x_factor = 8, y_factor = 8}
    %f = te.fuse %i, %jo                     adjacent axes, outer first
    te.reorder %f, %k, %ji                   or {perm = [2, 0, 1]}: %ji, %f, %k
    te.parallel %f      te.vectorize %ji      te.unroll %k
    te.bind %f {thread = "blockIdx.x"}
    te.annotate %ji {kind = "vectorize"}     none / unroll / vectorize / parallel / bind:TAG
    te.pragma %f {auto_unroll_max_step = 16}  annotations for the loop
    te.compute_inline %P    te.compute_root %P    te.compute_at %P, %jo
    te.prefetch %B, %k {offset = 768}        at each %k, prefetch what %k + 768 reads of %B

Stage ops make a new stage (a tensor) and are carried out before the
others (stage_rewrite.py), so later schedule ops can name what they make::

    %CL = te.cache_write %C {scope = "local"} : tensor<64x64xf32>
    %AS = te.cache_read %A, %C, %D {scope = "shared"} : tensor<64x64xf32>
    %CF = te.rfactor %C, %ki : tensor<4x64xf32>         (a reduce axis of %C)

Storage ops mark the buffer a stage is realized in::

    te.set_scope %C {scope = "shared"}
    te.storage_align %C {axis = 0, factor = 16, offset = 1}   row stride = 1 mod 16
    te.double_buffer %C

Integer attributes may be AutoTVM knobs (``#tune.knob<"tile_x", [8, 16], 16>``),
te.split's factor a split knob (``#tune.split<"tile_x", 64, "factors">``),
te.reorder's perm a reorder knob and te.annotate's kind an annotate knob:
such a te.func is a template (autotvm/space.py); ``--apply-schedule`` gives
an untuned template's knobs their defaults, with one warning.
"""

from __future__ import annotations

from ...ir import types as T
from ...ir.attributes import DialectAttr
from ...ir.attrkinds import INT, INTS, enum, optional
from ...ir.core import Attr, AttrKind, Operation
from .ops import ComputeOp

AXIS = T.OpaqueType("te.axis")
THREAD_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z",
               "vthread")
SCOPES = ("global", "shared", "local")
# a string, or a tuning knob in its place (te.annotate's kind)
STR_OR_KNOB = AttrKind("string", lambda v: None if type(v) is str or (
    isinstance(v, DialectAttr) and v.name.startswith("tune.")) else "must be a string")


def stage_axis_count(v, at=None) -> int:
    """How many axes (spatial, then reduce) the stage `v` has at `at` (or
    after all the ops that use it so far): a cache_write leaves it a copy,
    an rfactor a reduction over the factored axis alone."""
    d = v.defining_op()
    if at is not None:
        changed = [u for u in v.users if isinstance(u, (CacheWriteOp, RFactorOp)) and u.operands[0] is v
                   and u.parent is at.parent and u.is_before_in_block(at)]
    else:
        changed = [u for u in v.users if isinstance(u, (CacheWriteOp, RFactorOp)) and u.operands[0] is v]
    if changed:
        return v.type.rank + (1 if isinstance(changed[-1], RFactorOp) else 0)
    if isinstance(d, ComputeOp):
        return len(d.extents)
    if isinstance(d, CacheReadOp):
        return d.results[0].type.rank
    if isinstance(d, CacheWriteOp):
        return stage_axis_count(d.operands[0], d)
    if not isinstance(d, RFactorOp) or len(d.operands) != 2 or not is_stage(d.operands[0]):
        # a malformed stage op: its own verifier says what is wrong with it
        raise (d if d is not None else v.owner.parent_op).error("expected a stage (a te.compute result or the result of a stage op) "
                                       "and, for te.rfactor, a stage and an axis")
    # rfactor: one more spatial axis; the factored reduce axis goes unless it
    # was one part of a split (the other part stays a reduce axis)
    src = d.operands[0]
    n_red = stage_axis_count(src, d) - src.type.rank
    h = d.operands[1].defining_op()
    return d.results[0].type.rank + n_red - (0 if isinstance(h, SplitOp) else 1)


def handle_extent(h) -> int:
    """The extent of a root axis handle, or of one part of a split of one
    (an rfactor'd axis), read off the te.axes / te.split that made it."""
    op = h.defining_op()
    if isinstance(op, SplitOp):
        e = handle_extent(op.operands[0])
        f, p = op.attributes.get("factor"), op.attributes.get("nparts")
        inner = min(f, e) if f is not None else -(-e // p)
        return inner if h is op.results[1] else -(-e // inner)
    if isinstance(op, AxesOp):
        c = op.operands[0].defining_op()
        k = op.results.index(h)
        return c.extents[k]
    raise ValueError(f"the extent of a handle made by {op.name} is not known here")


def is_stage(v) -> bool:
    """A te.compute result, or a stage a stage op makes."""
    d = v.defining_op()
    return isinstance(d, (ComputeOp, StageOp))


class ScheduleOp(Operation):
    """Base: checks handle and stage operands, prints ``te.x %a, %b {attrs}``."""

    __slots__ = ()
    STAGE_OPERANDS = 0   # how many leading operands are stages (te.compute results)

    def verify_(self):
        for i, v in enumerate(self.operands):
            if i < self.STAGE_OPERANDS:
                if not is_stage(v):
                    raise self.error(f"operand #{i} must be the result of a te.compute (a stage)")
            elif v.type is not AXIS:
                raise self.error(f"operand #{i} must be an axis handle (!te.axis), got {v.type}")
        for r in self.results:
            if r.type is not AXIS:
                raise self.error(f"results are axis handles (!te.axis), got {r.type}")
        self.verify_schedule()

    def verify_schedule(self):
        pass

    def print_custom(self, p):
        p.write(f"{self.name} {p.values(self.operands)}")
        p.opt_attr_dict({k: v for k, v in self.attributes.items() if v is not None})


class AxesOp(ScheduleOp):
    __slots__ = ()
    name = "te.axes"
    OPERANDS = ("stage",)
    RESULTS = ("*axes",)
    STAGE_OPERANDS = 1

    def verify_schedule(self):
        n = stage_axis_count(self.operands[0], self)
        if len(self.results) != n:
            raise self.error(f"stage has {n} axes but {len(self.results)} handle(s) were given")


class SplitOp(ScheduleOp):
    __slots__ = ()
    name = "te.split"
    OPERANDS = ("axis",)
    RESULTS = ("outer", "inner")
    ATTRS = {"factor": Attr(optional(INT), None), "nparts": Attr(optional(INT), None)}

    def verify_schedule(self):
        if (self.attributes.get("factor") is None) == (self.attributes.get("nparts") is None):
            raise self.error("takes one of 'factor' or 'nparts'")


class TileOp(ScheduleOp):
    __slots__ = ()
    name = "te.tile"
    OPERANDS = ("x", "y")
    RESULTS = ("x_outer", "y_outer", "x_inner", "y_inner")
    ATTRS = {"x_factor": Attr(INT), "y_factor": Attr(INT)}


class FuseOp(ScheduleOp):
    __slots__ = ()
    name = "te.fuse"
    OPERANDS = ("*axes",)
    RESULTS = ("fused",)

    def verify_schedule(self):
        if len(self.operands) < 2:
            raise self.error("fuses two or more axes")


class ReorderOp(ScheduleOp):
    """``te.reorder %a, %b, %c``: the axes take their own positions in this
    order; ``{perm = [2, 0, 1]}`` orders them ``%c, %a, %b`` first (AutoTVM's
    ReorderEntity: ``axes[perm[0]]`` outermost), so a knob can pick it."""

    __slots__ = ()
    name = "te.reorder"
    OPERANDS = ("*axes",)
    RESULTS = ()
    ATTRS = {"perm": Attr(optional(INTS), None)}

    def verify_schedule(self):
        if len(set(self.operands)) != len(self.operands):
            raise self.error("lists an axis twice")
        perm = self.attributes.get("perm")
        if isinstance(perm, tuple) and (msg := perm_error(perm, len(self.operands))):
            raise self.error(f"'perm' {msg}")

    def ordered(self):
        """The axes in the order asked for (after perm, once instantiated)."""
        perm = self.attributes.get("perm")
        return list(self.operands) if perm is None else [self.operands[i] for i in perm]


def perm_error(perm, n) -> str | None:
    """Why `perm` is not a permutation of 0..n-1, or None."""
    if len(perm) != n or any(type(i) is not int for i in perm) or sorted(perm) != list(range(n)):
        return f"must be a permutation of 0..{n - 1} (one index per operand), got {list(perm)}"
    return None


class _AnnotateOp(ScheduleOp):
    __slots__ = ()
    OPERANDS = ("axis",)
    RESULTS = ()
    KIND = ""


class ParallelOp(_AnnotateOp):
    __slots__ = ()
    name = "te.parallel"
    KIND = "parallel"


class VectorizeOp(_AnnotateOp):
    __slots__ = ()
    name = "te.vectorize"
    KIND = "vectorized"


class UnrollOp(_AnnotateOp):
    __slots__ = ()
    name = "te.unroll"
    KIND = "unrolled"


class BindOp(_AnnotateOp):
    __slots__ = ()
    name = "te.bind"
    ATTRS = {"thread": Attr(enum(*THREAD_TAGS))}
    KIND = "thread"


ANNOTATE_KINDS = ("none", "unroll", "vectorize", "parallel")


def annotate_kind_error(kind) -> str | None:
    """Why `kind` is not a te.annotate kind, or None."""
    if type(kind) is str and (kind in ANNOTATE_KINDS
                              or kind.startswith("bind:") and kind[5:] in THREAD_TAGS):
        return None
    return (f"must be one of {', '.join(repr(k) for k in ANNOTATE_KINDS)} or 'bind:TAG' "
            f"(TAG one of {', '.join(THREAD_TAGS)}), got {kind!r}")


class AnnotateOp(_AnnotateOp):
    """``te.annotate %x {kind = "unroll"}``: the loop kind named by a value
    (AutoTVM's define_annotate): "none" leaves it serial, "unroll",
    "vectorize", "parallel" as te.unroll / te.vectorize / te.parallel,
    "bind:threadIdx.x" as te.bind.  Its kind may be a knob."""

    __slots__ = ()
    name = "te.annotate"
    ATTRS = {"kind": Attr(STR_OR_KNOB)}

    def verify_schedule(self):
        kind = self.attributes.get("kind")
        if not isinstance(kind, DialectAttr) and (msg := annotate_kind_error(kind)):
            raise self.error(f"'kind' {msg}")


class PragmaOp(_AnnotateOp):
    """Every attribute becomes a ``pragma_<key>`` annotation of the loop."""

    __slots__ = ()
    name = "te.pragma"

    def verify_schedule(self):
        if not self.attributes:
            raise self.error("needs at least one attribute, e.g. {auto_unroll_max_step = 16}")


class ComputeInlineOp(ScheduleOp):
    __slots__ = ()
    name = "te.compute_inline"
    OPERANDS = ("stage",)
    RESULTS = ()
    STAGE_OPERANDS = 1


class ComputeRootOp(ScheduleOp):
    __slots__ = ()
    name = "te.compute_root"
    OPERANDS = ("stage",)
    RESULTS = ()
    STAGE_OPERANDS = 1


class ComputeAtOp(ScheduleOp):
    __slots__ = ()
    name = "te.compute_at"
    OPERANDS = ("stage", "axis")
    RESULTS = ()
    STAGE_OPERANDS = 1


class PrefetchOp(ScheduleOp):
    """``te.prefetch %B, %k {offset = N}`` (TVM's ``s[C].prefetch(B, k, N)``):
    at the top of each iteration of loop %k, prefetch the part of tensor %B
    (a parameter or a stage) that %k's stage reads in iteration k + N, one
    tir.prefetch per cache line.  The shifted indices may pass %B's
    dimensions (a prefetch never faults): with %B packed as [.., jo, k, ji],
    k + K is row k of the next panel, which is how the GEMM schedule reads
    a weight's next panel from memory while its current one is in cache.
    The offset may be a knob."""

    __slots__ = ()
    name = "te.prefetch"
    OPERANDS = ("tensor", "axis")
    RESULTS = ()
    ATTRS = {"offset": Attr(INT)}

    def verify_(self):
        b, axis = self.operands
        if not isinstance(b.type, T.TensorType):
            raise self.error(f"operand #0 must be a tensor, got {b.type}")
        if axis.type is not AXIS:
            raise self.error(f"operand #1 must be an axis handle (!te.axis), got {axis.type}")


class SetScopeOp(ScheduleOp):
    __slots__ = ()
    name = "te.set_scope"
    OPERANDS = ("stage",)
    RESULTS = ()
    ATTRS = {"scope": Attr(enum(*SCOPES))}
    STAGE_OPERANDS = 1


class StorageAlignOp(ScheduleOp):
    """Pad the stage's buffer so the stride of dimension `axis` is
    ``offset`` modulo ``factor`` (TVM's storage_align; kills bank conflicts)."""

    __slots__ = ()
    name = "te.storage_align"
    OPERANDS = ("stage",)
    RESULTS = ()
    ATTRS = {"axis": Attr(INT), "factor": Attr(INT), "offset": Attr(INT, 0)}
    STAGE_OPERANDS = 1


class DoubleBufferOp(ScheduleOp):
    """Mark the stage's buffer for double buffering (tir-inject-double-buffer)."""

    __slots__ = ()
    name = "te.double_buffer"
    OPERANDS = ("stage",)
    RESULTS = ()
    STAGE_OPERANDS = 1


class StageOp(ScheduleOp):
    """Base of the ops that make a stage: ``%S = te.x %a, ... {attrs} : tensor<...>``."""

    __slots__ = ()

    def verify_(self):
        from ...ir import types as T
        t = self.results[0].type if len(self.results) == 1 else None
        if not isinstance(t, T.TensorType):
            raise self.error("makes one stage, a tensor")
        self.verify_schedule()

    def print_custom(self, p):
        super().print_custom(p)
        p.write(f" : {self.results[0].type}")


class CacheWriteOp(StageOp):
    """``%CL = te.cache_write %C {scope}``: %C's computation moves to the
    new stage %CL (in `scope`); %C becomes a copy of it."""

    __slots__ = ()
    name = "te.cache_write"
    OPERANDS = ("stage",)
    RESULTS = ("cache",)
    ATTRS = {"scope": Attr(enum(*SCOPES))}

    def verify_schedule(self):
        if not is_stage(self.operands[0]):
            raise self.error("operand #0 must be a stage (the result of a te.compute)")
        if self.results[0].type != self.operands[0].type:
            raise self.error(f"the cache has the stage's type {self.operands[0].type}")


class CacheReadOp(StageOp):
    """``%AS = te.cache_read %A, %R1, ... {scope}``: a copy of tensor %A in
    `scope`, read by the stages %R1, ... instead of %A."""

    __slots__ = ()
    name = "te.cache_read"
    OPERANDS = ("tensor", "*readers")
    RESULTS = ("cache",)
    ATTRS = {"scope": Attr(enum(*SCOPES))}

    def verify_schedule(self):
        from ...ir import types as T
        if not isinstance(self.operands[0].type, T.TensorType):
            raise self.error(f"caches a tensor, not {self.operands[0].type}")
        if len(self.operands) < 2:
            raise self.error("needs the stages that read the cache")
        for i, v in enumerate(self.operands[1:], 1):
            if not is_stage(v):
                raise self.error(f"operand #{i} must be a stage (the result of a te.compute)")
        if self.results[0].type != self.operands[0].type:
            raise self.error(f"the cache has the tensor's type {self.operands[0].type}")


class RFactorOp(StageOp):
    """``%CF = te.rfactor %C, %k {factor_axis = 0}``: the partial reductions of
    %C, one per value of its reduce axis %k, as a new stage whose dimension
    `factor_axis` is %k; %C then sums (reduces) %CF over that dimension."""

    __slots__ = ()
    name = "te.rfactor"
    OPERANDS = ("stage", "axis")
    RESULTS = ("factored",)
    ATTRS = {"factor_axis": Attr(INT, 0)}

    def verify_schedule(self):
        if not is_stage(self.operands[0]):
            raise self.error("operand #0 must be a stage (the result of a te.compute)")
        if self.operands[1].type is not AXIS:
            raise self.error(f"operand #1 must be an axis handle (!te.axis), got {self.operands[1].type}")


# the op families, for isinstance: every schedule op derives from ScheduleOp,
# the stage-making ones (cache_read, cache_write, rfactor) from StageOp
STAGE_OPS = (CacheWriteOp, CacheReadOp, RFactorOp)
SCHEDULE_OPS = (AxesOp, SplitOp, TileOp, FuseOp, ReorderOp, ParallelOp, VectorizeOp, UnrollOp, BindOp, AnnotateOp,
                PragmaOp, PrefetchOp,
                ComputeInlineOp, ComputeRootOp, ComputeAtOp, SetScopeOp, StorageAlignOp, DoubleBufferOp) + STAGE_OPS
