"""The llvm schedule of nn.attention's compute (topi_attention.py), for
static and '?' sizes alike.

    out:         its axes (named b, h, i, c by the compute, in the layout's
                 order) ordered b, h, i, c; the queries i in blocks of ROWS;
                 b, h and the block fused into one parallel loop (with a '?'
                 query axis: b, h fused and parallel, the blocks a loop
                 inside, whose iteration then reads a static region; the
                 last block's guards split off by tir-loop-partition);
                 head_dim c split by the vector width
    T_attn_max:  computed at the block: ROWS values; the key loop j outside
                 the block's rows, so each key row is read once per block
    T_attn_qk:   computed at that j: ROWS scores, each a dot product along
                 head_dim with the llvm_vectorize pragma (W lanes, a
                 horizontal sum)
    T_attn_acc:  computed at the block: ROWS x (Dv + PAD) accumulators, the
                 key loop j outside the rows and columns, the columns split
                 by W and vectorized
    T_attn_qk2:  computed at the accumulator's j: ROWS scores; each one's exp
                 (the same for every column, hoisted) scales v's row j into
                 its row of accumulators, W-wide multiply-adds

Every buffer is static (ROWS scores, maxima and rows of accumulators), so
the '?' rules of the dynamic schedule hold and the workspace does not grow
with the sequence.  Measured (bench/attention.py, AVX2, 2 threads, GPT-2's
12 heads with a mask, 8 queries a block): 512 tokens 41 ms, level with the
unfused kernels, 1024 tokens 179 ms against their 127 (4 queries a block,
reading each key row twice as often: 239); onnxruntime 10 and 36 ms.
"""

from __future__ import annotations

from ...dialects.te.ops import ComputeOp
from .topi_attention import STAGES


ROWS = 8   # queries per block: each key and value row read once per block


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
