"""The llvm schedule of nn.attention's compute (topi_attention.py), for
static and '?' sizes alike: per block of R queries (rows()), the block's
rows of scores held, the keys in tiles of T (a whole number of vectors).

    out:         its axes (named b, h, i, c by the compute, in the layout's
                 order) ordered b, h, i, c; the queries i in blocks of R;
                 b, h and the block fused into one parallel loop (with a '?'
                 query axis: b, h fused and parallel, the blocks a loop
                 inside, whose iteration then reads a static region; the
                 last block's guards split off by tir-loop-partition);
                 head_dim c split by the vector width
    T_attn_score: computed at the block: R rows of scores as long as the
                 keys (a local buffer of R x N, sized at run time for '?'
                 keys: O(seq) per thread, never M x N); per key tile, scale
                 and bias on an R x T tile of T_attn_qk, vectorized
    T_attn_qk:   computed at the score's key tile: an R x T register tile of
                 sums over head_dim, d outermost: per d, a row of Kᵀ's tile
                 (contiguous when the key is in "BNHS", which fuse-attention
                 gives) loaded as T / W vectors, each query's q[i, d]
                 broadcast, R x T / W multiply-adds
    T_attn_max:  computed at the block: R maxima over the held scores
    T_attn_acc:  computed at the block: R x (Dv + pad) sums; per key
                 tile, the columns in groups of two vectors, and per group
                 the tile's keys innermost but for the rows and the group's
                 two vectors: R x 2 sums stay in registers across the
                 tile, each p[i, j] broadcast against v's row j
    T_attn_p:    computed at the accumulator's key tile: R x T weights
                 exp(score - max) from the held scores, vectorized along
                 the keys (exp is an inline polynomial), once per score

So Q·Kᵀ is computed once.  T = W x min(accumulators // R, MAX_TILE_KEYS /
W) keys: on AVX2 (W = 8, 12 accumulators, R = 4) 4 queries x 24 keys of
scores in 12 registers; on AVX-512 (W = 16, R = 8) 8 x 32 in 16.  Every
other buffer is static (a tile of weights, the maxima, the rows of
accumulators); tir-loop-partition splits the last key tile and the last
block of queries off, so the others run with no guard.
"""

from __future__ import annotations

from ...dialects.te.ops import ComputeOp
from .topi_attention import STAGES



def rows(accumulators):
    """Queries per block, the rows of the score tile's registers: 8 where
    16 accumulators hold 8 rows of two vectors (AVX-512: each key tile is
    read once for 8 queries; 1.34 -> 0.99 of onnxruntime's time at 1024
    tokens, 1.42 -> 1.14 at 2048), else 4 (AVX2's 12)."""
    return 8 if accumulators >= 16 else 4


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
    block = rows(accumulators)
    if any(d is None for d in out.type.shape):
        row, _ = s.split(i, factor=block)
        s.parallel(s.fuse(b, h))
    else:
        io, _ = s.split(i, factor=block)
        row = s.fuse(b, h, io)
        s.parallel(row)
    tile = width * max(1, min(accumulators // block, MAX_TILE_KEYS // width))
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
    s.compute_at(p, jo)   # a tile of weights, from the block's scores
    _, _, _, j = s.axes(p)
    _, vec = s.split(j, factor=width)
    s.vectorize(vec)
    # pass 1, before them: the block's rows of scores, a key tile at a time
    # from a register tile of Q·Kᵀ, then their maxima
    s.compute_at(mx, ab)
    b, h, i, j = s.axes(mx)
    jo, ji = s.split(j, factor=tile)
    s.reorder(b, h, jo, i, ji)
    sc = stage["T_attn_score"]
    s.compute_at(sc, ab)
    b, h, i, j = s.axes(sc)
    jo, ji = s.split(j, factor=tile)
    s.reorder(b, h, jo, i, ji)
    _, vec = s.split(ji, factor=width)
    s.vectorize(vec)
    s.compute_at(stage["T_attn_qk"], jo)
    _score_tile(s, stage["T_attn_qk"], width)


def _score_tile(s, qk, width):
    """A tile of scores (attached: ROWS x T) as register sums: head_dim
    outermost, then the rows and the tile's vectors, unrolled."""
    b, h, i, j, d = s.axes(qk)
    ju, jv = s.split(j, factor=width)
    s.reorder(b, h, d, i, ju, jv)
    s.unroll(i)
    s.unroll(ju)
    s.vectorize(jv)

