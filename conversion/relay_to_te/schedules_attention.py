"""The llvm schedule of nn.attention's compute (topi_attention.py), for
static and '?' sizes alike: per block of ROWS queries, the keys in tiles
of T (a whole number of vectors), each stage one tile at a time.

    out:         its axes (named b, h, i, c by the compute, in the layout's
                 order) ordered b, h, i, c; the queries i in blocks of ROWS;
                 b, h and the block fused into one parallel loop (with a '?'
                 query axis: b, h fused and parallel, the blocks a loop
                 inside, whose iteration then reads a static region; the
                 last block's guards split off by tir-loop-partition);
                 head_dim c split by the vector width
    T_attn_max:  computed at the block: ROWS maxima over the key tiles
    T_attn_score: computed at the key tile: scale and bias on a ROWS x T
                 tile of T_attn_qk, vectorized (read by the max as scalars,
                 so the sums stay whole vectors in registers)
    T_attn_qk:   computed there too: a ROWS x T register tile of sums
                 over head_dim, d outermost: per d, a row of Kᵀ's tile
                 (contiguous when the key is in "BNHS", which fuse-attention
                 gives) loaded as T / W vectors, each query's q[i, d]
                 broadcast, ROWS x T / W multiply-adds
    T_attn_acc:  computed at the block: ROWS x (Dv + pad) sums; per key
                 tile, the columns in groups of two vectors, and per group
                 the tile's keys innermost but for the rows and the group's
                 two vectors: ROWS x 2 sums stay in registers across the
                 tile, each p[i, j] broadcast against v's row j
    T_attn_p:    computed at the accumulator's key tile: ROWS x T weights
                 exp(score - max), vectorized along the keys (exp is an
                 inline polynomial), so exp runs once per score
    T_attn_qk2:  computed there too, the register tile of the first pass

T = W x min(accumulators // ROWS, MAX_TILE_KEYS / W) keys: on AVX2 (W = 8,
12 accumulators) 4 queries x 24 keys of scores in 12 registers; on AVX-512
(W = 16) 4 x 32 in 8.  Every buffer is static
(a block's tile of scores and weights, its maxima and rows of
accumulators), so the '?' rules of the dynamic schedule hold and the
workspace does not grow with the sequence; tir-loop-partition splits the
last key tile and the last block of queries off, so the others run with
no guard.
"""

from __future__ import annotations

from ...dialects.te.ops import ComputeOp
from .topi_attention import STAGES

ROWS = 4   # queries per block: the rows of the score tile's registers
# keys per tile at most: on AVX-512, 64 (4 vectors, 16 registers of scores)
# ran 4-25% faster than 32 at 512-1024 tokens, but LLVM's SLP vectorizer
# spent 28 s on its unrolled code (32: 7 s of LLVM for the kernel, still a
# GPT-2 build's largest)
MAX_TILE_KEYS = 32


def is_attention(e, outputs):
    """Whether the te.func being scheduled is nn.attention's compute."""
    names = {op.results[0].name for op in e.block.ops if isinstance(op, ComputeOp)}
    return len(outputs) == 1 and set(STAGES) <= names


def attention_schedule(e, outputs, width=16, accumulators=16):
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
    tile = width * max(1, min(accumulators // ROWS, MAX_TILE_KEYS // width))
    mx, acc, p = stage["T_attn_max"], stage["T_attn_acc"], stage["T_attn_p"]
    # pass 2's loops first: the maxima are computed at them (their reader,
    # the weights, sits at the accumulator's key tile)
    s.compute_at(acc, row)
    ab, h, i, c, j = s.axes(acc)
    jo, ji = s.split(j, factor=tile)
    group = 2 * width
    co, ci = s.split(c, factor=group)
    cu, cv = s.split(ci, factor=width)
    s.reorder(ab, h, jo, co, ji, i, cu, cv)
    s.unroll(i)
    s.unroll(cu)
    s.vectorize(cv)
    _tile_stages(s, p, stage["T_attn_qk2"], jo, width)
    # pass 1, before them: per key tile, its scores in registers, then their maxima
    s.compute_at(mx, ab)
    b, h, i, j = s.axes(mx)
    jo, ji = s.split(j, factor=tile)
    s.reorder(b, h, jo, i, ji)
    _tile_stages(s, stage["T_attn_score"], stage["T_attn_qk"], jo, width)


def _tile_stages(s, elementwise, qk, at, width):
    """An elementwise stage over a tile of scores, computed at the key
    tile `at` and vectorized along the keys, with its tile of Q·Kᵀ sums
    computed at its first axis as a register tile."""
    s.compute_at(elementwise, at)
    first, _, _, j = s.axes(elementwise)
    _, vec = s.split(j, factor=width)
    s.vectorize(vec)
    s.compute_at(qk, first)
    _score_tile(s, qk, width)


def _score_tile(s, qk, width):
    """A tile of scores (attached: ROWS x T) as register sums: head_dim
    outermost, then the rows and the tile's vectors, unrolled."""
    b, h, i, j, d = s.axes(qk)
    ju, jv = s.split(j, factor=width)
    s.reorder(b, h, d, i, ju, jv)
    s.unroll(i)
    s.unroll(ju)
    s.vectorize(jv)

