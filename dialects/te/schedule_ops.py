"""Schedule ops, in the style of MLIR's transform dialect.

They sit in a te.func after the computes and act on handles of type
``!te.axis`` (one per loop of a stage); ``--apply-schedule`` carries them
out and erases them::

    %i, %j, %k = te.axes %D                  spatial then reduce axes of stage %D
    %jo, %ji = te.split %j {factor = 16}     or {nparts = 4}
    %xo, %yo, %xi, %yi = te.tile %x, %y {x_factor = 8, y_factor = 8}
    %f = te.fuse %i, %jo                     adjacent axes, outer first
    te.reorder %f, %k, %ji
    te.parallel %f      te.vectorize %ji      te.unroll %k
    te.bind %f {thread = "blockIdx.x"}
    te.pragma %f {auto_unroll_max_step = 16}  annotations for the loop
    te.compute_inline %P    te.compute_root %P    te.compute_at %P, %jo

Integer attributes may be AutoTVM knobs (``#tune.knob<"tile_x", [8, 16]>``);
``--apply-history-best`` puts numbers in their place.
"""

from __future__ import annotations

from ...ir import types as T
from ...ir.attrkinds import INT, enum, optional
from ...ir.core import Attr, Operation

AXIS = T.OpaqueType("te.axis")
THREAD_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")


class ScheduleOp(Operation):
    """Base: checks handle and stage operands, prints ``te.x %a, %b {attrs}``."""

    __slots__ = ()
    STAGE_OPERANDS = 0   # how many leading operands are stages (te.compute results)

    def verify_(self):
        for i, v in enumerate(self.operands):
            if i < self.STAGE_OPERANDS:
                d = v.defining_op()
                if d is None or d.name != "te.compute":
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
        c = self.operands[0].defining_op()
        n = len(c.extents)
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
    __slots__ = ()
    name = "te.reorder"
    OPERANDS = ("*axes",)
    RESULTS = ()

    def verify_schedule(self):
        if len(set(self.operands)) != len(self.operands):
            raise self.error("lists an axis twice")


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


SCHEDULE_OPS = frozenset({c.name for c in (AxesOp, SplitOp, TileOp, FuseOp, ReorderOp, ParallelOp, VectorizeOp,
                                           UnrollOp, BindOp, PragmaOp, ComputeInlineOp, ComputeRootOp,
                                           ComputeAtOp)})
