"""The CUDA schedule of nn.attention's compute (topi_attention.py): one
kernel, a thread block per (batch x head, block of QB queries), one thread
per query, the keys and values in tiles of TK rows staged in shared memory.

    blockIdx.y = b.h, blockIdx.x = query block {
      T_attn_max   [QB] shared:   for jo (key tiles) {
                                    K tile [TK x D] -> shared (cooperative, float4)
                                    threadIdx.x = query { for ji: max over q . k }
                                  }
      T_attn_acc   [QB x (Dv+pad)] shared:
                                  for jo {
                                    K tile, V tile -> shared (cooperative, float4)
                                    threadIdx.x = query { for ji: p = exp(q . k * scale + mask - max)
                                                                  for c: acc[c] += p * v[ji, c] }
                                  }
      out          threadIdx.x = query { for c: acc[c] / acc[Dv] }
    }

The key tiles are loop ``jo`` of each reduction, outside its thread axis,
as in the shared-tiled dense (schedules_cuda.shared_tiled): the block
loads a tile together, ``tir-thread-sync`` puts the barriers around it,
and every thread reads the tile from shared memory.  The tile's loads are
one fused loop over the tile's elements, split by 4 (a float4 where the
head dim is a multiple of 4: codegen's aligned vector access) and by the
block's threads.  No M x N buffer exists: per block, the maxima, the
accumulator rows (QB x (Dv + pad), its last columns the softmax's
denominator) and two tiles live in shared memory.  The two passes over
the keys are topi_attention's (Q.Kᵀ computed twice: a TE reduction cannot
carry FlashAttention's running rescale).  Knobs: ``STAGE.queries`` (QB,
the block's threads: 32; 64, 128) and ``STAGE.keys`` (TK: 32; 16, 64),
divisors of the sequence lengths only (a tail would put barriers under
guards).  Static shapes only; anything else gets the default schedule.
"""

from __future__ import annotations

from ...dialects.te.ops import ComputeOp
from .schedules import knob
from .topi_attention import STAGES

QB = 32    # queries per block: the block's threads
TK = 32    # keys per shared tile
QUERY_CANDIDATES = (32, 64, 128)
KEY_CANDIDATES = (16, 32, 64)
VECTOR = 4  # float4


def is_attention(e, outputs):
    """Whether the te.func being scheduled is nn.attention's compute."""
    names = {op.results[0].name for op in e.block.ops if isinstance(op, ComputeOp)}
    return len(outputs) == 1 and set(STAGES) <= names


def attention_schedule_cuda(e, outputs):
    """Append the schedule (module docstring); False, adding nothing, when
    the shapes are not static or no block size divides them."""
    from ...dialects.te.builder import ScheduleBuilder
    stage = {op.results[0].name: op for op in e.block.ops if isinstance(op, ComputeOp)}
    out = outputs[0]
    mx, acc = stage["T_attn_max"], stage["T_attn_acc"]
    b, h, m, n = stage["T_attn_qk"].tensor_type.shape
    if any(d is None for d in (b, h, m, n)) or not out.type.is_static:
        return False
    qb = next((x for x in (QB, 16, 8, 4, 2, 1) if m % x == 0), 1)
    tk = next((x for x in (TK, 16, 8, 4, 2, 1) if n % x == 0), 1)
    reads = _tensor_reads(e, stage)
    s = ScheduleBuilder(e)
    for c in [op for op in e.block.ops if isinstance(op, ComputeOp)]:
        r = c.results[0]
        if r is not out and r.name not in ("T_attn_max", "T_attn_acc", "T_attn_qk", "T_attn_qk2", "T_attn_p"):
            s.compute_inline(r)   # the score (and a splat bias or scale)
    vector = all(reads[t].type.shape[-1] % VECTOR == 0 for t in ("key", "value"))
    qb = knob(out, "queries", qb, [x for x in QUERY_CANDIDATES if m % x == 0])
    tk = knob(out, "keys", tk, [x for x in KEY_CANDIDATES if n % x == 0])
    axes = dict(zip([a.name for a in out.defining_op().body.args], s.axes(out)))
    ob, oh, oi, oc = (axes[x] for x in "bhic")
    s.reorder(ob, oh, oi, oc)
    bh = s.fuse(ob, oh)
    io, ii = s.split(oi, factor=qb)
    s.bind(bh, "blockIdx.y")
    s.bind(io, "blockIdx.x")
    s.bind(ii, "threadIdx.x")
    for red, qk in ((mx, stage["T_attn_qk"]), (acc, stage["T_attn_qk2"])):
        r = red.results[0]
        s.set_scope(r, "shared")
        s.compute_at(r, io)
        ax = s.axes(r)
        ri, j = ax[2], ax[-1]
        jo, ji = s.split(j, factor=tk)
        if red is acc:
            s.reorder(*ax[:2], jo, ri, ji, ax[3])
        else:
            s.reorder(*ax[:2], jo, ri, ji)
        s.bind(ri, "threadIdx.x")
        inner = ji
        if red is acc:
            p = stage["T_attn_p"].results[0]
            s.compute_at(p, ji)
            inner = s.axes(p)[-1]
        s.compute_at(qk.results[0], inner)
        # the thread's query row in registers, read once per key tile
        s.compute_at(s.cache_read(reads["query"], [qk.results[0]], "local"), ri)
        for t in ([reads["key"]] + ([reads["value"]] if red is acc else [])):
            readers = [qk.results[0]] if t is reads["key"] else [r]
            cache = s.cache_read(t, readers, "shared")
            s.compute_at(cache, jo)
            _cooperative(s, cache, qb, vector)
    return True


def _tensor_reads(e, stage):
    """The tensors the key and the value are read from: the second read of
    Q.Kᵀ's body (q's, then k's) and the accumulator's read that is not
    the weights'."""
    from ...dialects.te.ops import ReadOp
    qk = [op.tensor for op in stage["T_attn_qk"].body.ops if isinstance(op, ReadOp)]
    p = stage["T_attn_p"].results[0]
    v = [op.tensor for op in stage["T_attn_acc"].body.ops if isinstance(op, ReadOp) and op.tensor is not p]
    return {"query": qk[0], "key": qk[1], "value": v[0]}


def _cooperative(s, cache, threads, vector):
    """The cache stage's loads spread over the block's threads: its axes
    fused, split by VECTOR (vectorized: a float4 where aligned) and by
    the thread count (threadIdx.x)."""
    ax = s._op("te.axes", [cache], cache.type.rank, [f"ax{d}" for d in range(cache.type.rank)])
    if vector:   # the row in groups of 4 (affine in the lane: one float4), the rest fused
        lo, vec = s.split(ax[-1], factor=VECTOR)
        s.vectorize(vec)
        ax = list(ax[:-1]) + [lo]
    _, tx = s.split(s.fuse(*ax), factor=threads)
    s.bind(tx, "threadIdx.x")
