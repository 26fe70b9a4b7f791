"""The llvm schedule of nn.attention's compute (topi_attention.py), for
static and '?' sizes alike.

    out:         its axes (named b, h, i, c by the compute, in the layout's
                 order) ordered b, h, i, c; the row b, h, i fused into one
                 parallel loop (with a '?' query axis: b, h fused and parallel,
                 i a loop inside, whose iteration then reads a static region);
                 head_dim c split by the vector width
    T_attn_max:  computed at the row: one value; its key loop j carries
    T_attn_qk:   computed at that j: one score, a dot product along head_dim
                 with the llvm_vectorize pragma (W lanes, a horizontal sum)
    T_attn_acc:  computed at the row: Dv + PAD accumulators, the key loop j
                 outside the columns, the columns split by W and vectorized
    T_attn_qk2:  computed at the accumulator's j: one score; its exp (the
                 same for every column, hoisted) scales v's row j into the
                 accumulators, W-wide multiply-adds

Every buffer is static (one score, one exp, one max, a row of
accumulators), so the '?' rules of the dynamic schedule hold and the
workspace does not grow with the sequence.
"""

from __future__ import annotations

from ...dialects.te.ops import ComputeOp
from .topi_attention import STAGES


ROWS = 4   # queries per block: each key and value row read once per block


def is_attention(e, outputs):
    """Whether the te.func being scheduled is nn.attention's compute."""
    names = {op.results[0].name for op in e.block.ops if isinstance(op, ComputeOp)}
    return len(outputs) == 1 and set(STAGES) <= names


def attention_schedule(e, outputs, width=16):
    from ...dialects.te.builder import ScheduleBuilder
    s = ScheduleBuilder(e)
    stage = {op.results[0].name: op.results[0] for op in e.block.ops if isinstance(op, ComputeOp)}
    for c in [op for op in e.block.ops if isinstance(op, ComputeOp)]:
        r = c.results[0]
        if r not in outputs and r.name not in STAGES:
            s.compute_inline(r)   # a splat bias or scale made into a stage
    out = outputs[0]
    axes = dict(zip([a.name for a in out.defining_op().body.args], s.axes(out)))   # named by the compute
    b, h, i, c = (axes[n] for n in "bhic")
    s.reorder(b, h, i, c)
    if out.type.shape[-1] % width == 0:
        _, vec = s.split(c, factor=width)
        s.vectorize(vec)
    if any(d is None for d in out.type.shape):
        # a '?' query axis stays a loop of its own (the region of one of its
        # iterations is then static), in blocks of ROWS queries (the last
        # block's guards split off by tir-loop-partition); the heads run in
        # parallel
        row, _ = s.split(i, factor=ROWS)
        s.parallel(s.fuse(b, h))
    else:
        io, _ = s.split(i, factor=ROWS)
        row = s.fuse(b, h, io)
        s.parallel(row)
    mx, acc = stage["T_attn_max"], stage["T_attn_acc"]
    s.compute_at(mx, row)
    s.compute_at(acc, row)
    b, h, i, j = s.axes(mx)
    s.reorder(b, h, j, i)
    s.compute_at(stage["T_attn_qk"], j)
    _dot(s, stage["T_attn_qk"], width)
    b, h, i, c, j = s.axes(acc)
    co, ci = s.split(c, factor=width)
    s.reorder(b, h, j, i, co, ci)
    s.vectorize(ci)
    s.compute_at(stage["T_attn_qk2"], j)
    _dot(s, stage["T_attn_qk2"], width)


def _dot(s, qk, width):
    """The head_dim reduction of a score: W lanes of partial sums."""
    s._op("te.pragma", [s.axes(qk)[-1]], llvm_vectorize=width)
