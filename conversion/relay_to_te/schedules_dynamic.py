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
  innermost spatial axis: split by the vector width where that axis is
  static and a multiple of it (no tail then), left whole to LLVM's
  vectoriser where it is '?' (LLVM makes the tail);
* a float sum / max / min whose innermost reduce axis is '?' or static
  and at least the vector width gets the llvm_vectorize pragma there
  (partial results in vector lanes): attention's Q K^T with transpose_b
  (a dot product along head_dim per score) and softmax's max and sum of
  exp over a sequence (exp is an inline polynomial, so it vectorizes).
  Prefill of a 2-layer GPT-style decoder at 512 tokens: Q K^T 155 -> 19 ms,
  softmax 143 -> 25 ms per layer;
* a GEMM whose static columns every read walks contiguously (a packed
  weight panel, or a K x N matrix: alter-op-layout makes one of them for
  a dense with '?' rows) runs panels of up to 4 vectors of columns in
  parallel, the rows inside in blocks of 4 (the last block guarded), and
  per block 4 x 4 vectors of sums over k in registers (16 independent
  chains of FMAs), its epilogue applied per panel: a decoding step's one
  row still uses every core.  With a single panel (attention's P V at
  head_dim 64) the batch runs in parallel instead (29 -> 14 ms at 512).
  A weight packed at compile time and streamed from memory (1 MB or more)
  is prefetched from the k loop, the same row of the next column panel's
  packed panels.  Measured in one process, 2 threads: GPT-2's LM head
  (768 x 50257) at 1 row 8.3 -> 6.5 ms (onnxruntime 7.4), 16 rows 21.2 ->
  18.2 ms; but each row block prefetches again, so at 128 rows and more it
  costs (the 2-layer decoder's prefill 5% slower at 32 and 128 tokens, 11%
  at 512, its decoding 20% faster).

Correct for every size; its speed is the next step (a GEMM with a dynamic
row count wants the register tiles of schedules_gemm.py, with a tail).
"""

from __future__ import annotations

from ...dialects.te.builder import ScheduleBuilder
from ...dialects.te.ops import ComputeOp
from ...ir import types as T

ROWS = 4   # rows of a dynamic GEMM's register tile (fewer where its accumulators would not fit)


def dynamic_schedule(e, outputs, width=16, accumulators=16):
    s = ScheduleBuilder(e)
    computes = [op for op in e.block.ops if isinstance(op, ComputeOp)]
    outs = [c for c in computes if c.results[0] in outputs]
    for c in computes:
        if c not in outs and c.reducer is None:
            s.compute_inline(c.results[0])
    inner = [c for c in computes if c not in outs and c.reducer is not None]
    if len(outs) == 1 and _column_panels(s, outs[0], inner, width, accumulators):
        return
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
                    _vectorize_reduction(s, c, s.axes(c.results[0]), width)
                inner = []
        _vectorize_parallel(s, o, axes, width)
    for c in inner:   # static: at the root, once
        _vectorize_parallel(s, c, s.axes(c.results[0]), width)


def _column_panels(s, o, inner, width, accumulators=16):
    """A GEMM (the output, or the one reduction its epilogue reads) whose
    columns are a static multiple of `width` and read contiguously: the
    columns in panels of up to 4 vectors, the panels in parallel (a one-row
    product, a decoding step, still uses every core), the rows inside in
    blocks of ROWS, and per block and panel the sums over k in a local
    tile (registers).  The tile holds at most `accumulators` vectors
    (VectorUnit.accumulators): on AVX2's 16 registers, 3 rows of a 4-vector
    panel (4 x 4 spilled its sums to the stack at every k).  Returns
    whether it applied."""
    gemm = o if o.reducer is not None and not inner else inner[0] if len(inner) == 1 else None
    n, packed = (None, None) if gemm is None else _columns_contiguous(gemm, width)
    if n is None or gemm.rank != o.rank:
        return False
    if gemm is not o and (o.tensor_type.shape != gemm.tensor_type.shape):
        return False
    rank = o.rank
    acc = gemm.results[0]
    if gemm is o:   # the sums in a local tile (registers), copied out per panel
        cache = s.cache_write(acc, "local")
        acc = cache
    # a panel of up to 4 vectors: as many independent sums in flight per k
    # (of whole packed panels where the columns end inside the last one)
    panel = next(p for p in (4 * width, 2 * width, width) if n % p == 0)
    rows = max(1, min(ROWS, accumulators // (panel // width)))
    # (the output's spatial axes: after a cache_write it is a copy)
    axes = list(s._op("te.axes", [o.results[0]], rank, [a.name for a in o.body.args[:rank]]))
    jo, ji = s.split(axes[rank - 1], factor=panel)
    # rows in blocks (the last one guarded): rows x 4 vectors of sums per k
    ro, ri = s.split(axes[rank - 2], factor=rows)
    if n // panel == 1 and rank > 2:
        # one panel (attention's P V, head_dim 64): the batch (heads) in parallel
        s.reorder(*axes[:rank - 2], jo, ro, ri, ji)
        s.parallel(axes[0])
    else:
        s.reorder(jo, *axes[:rank - 2], ro, ri, ji)
        s.parallel(jo)
    _, jv = s.split(ji, factor=width)
    s.vectorize(jv)
    s.compute_at(acc, ro)
    # the axes of the local tile are those of the compute it took over (spatial, then k)
    g = list(s._op("te.axes", [acc], len(gemm.body.args), [a.name for a in gemm.body.args]))
    gjo, gji = s.split(g[rank - 1], factor=panel)
    if packed and packed < panel and panel % packed == 0:
        # the column panel spans several packed panels: split at theirs
        # first, so that each vector's weight index (j / n, k, j % n)
        # simplifies to one panel and an affine column, which tir-vectorize
        # takes (a dot product of words becomes vdpbf16ps / vpdpbusd only
        # as a tir vector; LLVM's own vectorizer does not make it one)
        gjp, gjq = s.split(gji, factor=packed)
        gju, gjv = s.split(gjq, factor=width)
        s.reorder(*g[:rank - 2], gjo, *g[rank:], g[rank - 2], gjp, gju, gjv)
        s.unroll(gjp)
    else:
        gju, gjv = s.split(gji, factor=width)
        s.reorder(*g[:rank - 2], gjo, *g[rank:], g[rank - 2], gju, gjv)
    s.unroll(g[rank - 2])
    s.unroll(gju)
    s.vectorize(gjv)
    _prefetch_next_panels(s, gemm, g, panel)
    return True


def _prefetch_next_panels(s, gemm, axes, panel):
    """Prefetch, from the k loop, the same row of the packed weight panels
    the next column panel reads (schedules_gemm.prefetch_panels' reason:
    a streamed weight waits on memory otherwise); a column panel spans
    panel // n packed panels of n columns."""
    from .schedules_gemm import streamed_weight
    w = streamed_weight(gemm)
    if w is None:
        return
    tensor, axis, offset = w
    n = tensor.type.shape[-1]   # [.., N/n, K, n]: the packed panel's columns
    s.prefetch(tensor, axes[axis], offset * max(1, panel // n))


def _columns_contiguous(c, width):
    """(the columns to tile, the packed panel width n or None) when c is a
    sum over one reduce axis whose static last axis j every read takes as
    its last index, plainly or as j % n of a packed panel (j // n before
    it), and j is a multiple of `width`, or ends inside the last packed
    panel (zero-padded: then the columns of whole panels, the last tile's
    store guarded); else (None, None)."""
    from ...dialects.te.ops import ReadOp
    shape = c.tensor_type.shape
    if c.reducer != "sum" or len(c.reduce_extents) != 1 or c.rank < 2 or shape[-1] is None:
        return None, None
    j = c.body.args[c.rank - 1]

    def uses_j(v, seen=0):
        if v is j:
            return True
        d = v.defining_op()
        return d is not None and seen < 8 and any(uses_j(x, seen + 1) for x in d.operands)

    def is_mod(v, kind):
        d = v.defining_op()
        return (d is not None and d.name == kind and d.operands[0] is j
                and _const(d.operands[1]) is not None and _const(d.operands[1]) % width == 0)
    vector_read = False   # some read walks the columns (the weight panel)
    packed = None         # its panel width, where packed
    for op in c.body.ops:
        if not isinstance(op, ReadOp) or not op.indices:
            continue
        *lead, last = op.indices
        if any(uses_j(v) and not is_mod(v, "arith.floordivsi") for v in lead):
            return None, None
        if uses_j(last):
            if not (last is j or is_mod(last, "arith.floormodsi")):
                return None, None
            vector_read = True
            if last is not j:
                packed = _const(last.defining_op().operands[1])
    n = shape[-1]
    if not vector_read:
        return None, None
    if n % width == 0:
        return n, packed
    return (-(-n // packed) * packed, packed) if packed else (None, None)


def _const(v):
    d = v.defining_op()
    return d.attributes.get("value") if d is not None and d.name == "arith.constant" else None


def _attach_axis(o, inner):
    """The output axis to compute the reductions `inner` at: the last '?'
    axis of the output below the smallest rank among them; None if none."""
    rank = min(c.rank for c in inner)
    dyn = [a for a, d in enumerate(o.tensor_type.shape[:max(rank, 1)]) if d is None]
    return dyn[-1] if dyn else None


def _contiguous_in(c, iv):
    """Whether every read of compute `c` that moves with axis `iv` moves along
    its last dimension only: a read along another (a transpose's '?'
    sequence, stride 768) makes LLVM's vectoriser give up on the loop it was
    told to vectorize, and say so on stderr."""
    def depends(x):
        if x is iv:
            return True
        d = x.defining_op()
        return d is not None and any(depends(o) for o in d.operands)
    for op in c.walk():
        if op.name == "te.read" and any(depends(x) for x in op.indices[:-1]):
            return False
    return True


def _vectorize_parallel(s, c, axes, width):
    """Parallel outermost axis that is not a static 1 (a batch of one
    leaves the next axis: the heads of a KV cache's K transposed per
    decoding step, 2.5 -> 4.5 GB/s on 2 threads); vectorized innermost
    spatial axis: split by `width` where static and a multiple of it (no
    tail), else, where '?' and every read moves along its own last
    dimension, left whole to LLVM's vectoriser (it makes the tail); the
    reduction vectorized as _vectorize_reduction says."""
    rank = c.rank
    _vectorize_reduction(s, c, axes, width)
    if rank == 0:
        return
    last = c.tensor_type.shape[-1]
    if rank > 1 and c.reducer is None:
        if last is not None and last % width == 0:
            _, vec = s.split(axes[rank - 1], factor=width)
            s.vectorize(vec)
        elif last is None and _contiguous_in(c, c.body.args[rank - 1]):
            s.vectorize(axes[rank - 1])
    shape = c.tensor_type.shape
    outer = next((k for k in range(rank - 1) if shape[k] != 1), 0)
    s.parallel(axes[outer])


def _vectorize_reduction(s, c, axes, width):
    """A float sum / max / min whose innermost reduce extent is '?' or at
    least `width`: the llvm_vectorize pragma there, `width` lanes of partial
    results (attention's Q K^T with transpose_b, a dot product along
    head_dim per score; softmax's max and sum of exp over a sequence, the
    exp inlined as a polynomial that vectorizes)."""
    if c.reducer not in ("sum", "max", "min") or not c.reduce_extents \
            or not isinstance(c.tensor_type.element_type, T.FloatType):
        return
    red = c.reduce_extents[-1]   # an int, or the size Value of a '?' extent
    if not isinstance(red, int) or red >= width:
        s._op("te.pragma", [axes[-1]], llvm_vectorize=width)
