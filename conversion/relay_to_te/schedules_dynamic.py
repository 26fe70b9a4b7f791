"""The CPU schedule of a kernel with '?' dimensions (sizes known at run time).

The static schedules (schedules.py, schedules_gemm.py) choose tiles and
padding from the extents; here some extents are Values, so this one picks
only what holds for every size:

* an elementwise stage that is not an output is inlined into its readers;
* a reduction that is not an output is computed at the output's loop
  over the last '?' axis it shares with the output (softmax's max: the
  row loop, not the column loop), so that its buffer is the static slice
  one step of that loop reads (TIR buffers are static; a dynamic one exists only
  as a kernel's parameter);
* every output runs its outermost axis in parallel, and vectorizes its
  innermost spatial axis where that axis is static and a multiple of the
  vector width (a split by the width needs no tail then).

Correct for every size; its speed is the next step (a GEMM with a dynamic
row count wants the register tiles of schedules_gemm.py, with a tail).
"""

from __future__ import annotations

from ...dialects.te.builder import ScheduleBuilder
from ...dialects.te.ops import ComputeOp


def dynamic_schedule(e, outputs, width=16):
    s = ScheduleBuilder(e)
    computes = [op for op in e.block.ops if isinstance(op, ComputeOp)]
    outs = [c for c in computes if c.results[0] in outputs]
    for c in computes:
        if c not in outs and c.reducer is None:
            s.compute_inline(c.results[0])
    inner = [c for c in computes if c not in outs and c.reducer is not None]
    for o in outs:
        axes = s.axes(o.results[0])
        if inner and len(outs) == 1:
            # at the output's last '?' loop among the axes a reduction has (its
            # leading ones: softmax's max lacks the last), each reduction is a
            # static slice, made once per step
            at = _attach_axis(o, inner)
            if at is not None:
                for c in inner:
                    s.compute_at(c.results[0], axes[at])
                inner = []
        _vectorize_parallel(s, o, axes, width)
    for c in inner:   # static: at the root, once
        _vectorize_parallel(s, c, s.axes(c.results[0]), width)


def _attach_axis(o, inner):
    """The output axis to compute the reductions `inner` at: the last '?'
    axis of the output below the smallest rank among them; None if none."""
    rank = min(c.rank for c in inner)
    dyn = [a for a, d in enumerate(o.tensor_type.shape[:max(rank, 1)]) if d is None]
    return dyn[-1] if dyn else None


def _vectorize_parallel(s, c, axes, width):
    """Parallel outermost axis, vectorized innermost static spatial axis."""
    rank = c.rank
    if rank == 0:
        return
    last = c.tensor_type.shape[-1]
    if rank > 1 and c.reducer is None and last is not None and last % width == 0:
        _, vec = s.split(axes[rank - 1], factor=width)
        s.vectorize(vec)
    s.parallel(axes[0])
