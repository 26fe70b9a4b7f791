"""Default schedules (target llvm), written as te schedule ops.

Never the naive loop nest: every stage that is not inlined gets a parallel
loop and, where the memory layout allows, a vector loop.  Per fused group
(one te.func):

* a stage that is neither an output nor a reduction is inlined (elementwise
  ops before or after the anchor), except padding (a guarded read) that a
  reduction reads: inlined, its guard would sit in the reduction's inner
  loop and turn its vector loads into gathers, so it gets its own
  parallel, vectorized loop nest;
* an elementwise stage: the outer axes and the outer part of the last axis
  fused into one parallel loop, the last axis split by the vector width
  (16, 8 or 4, whichever divides it first) and vectorized; a last axis no
  width divides is vectorized whole (LLVM adds the remainder loop); one
  shorter than 4 is unrolled inside a vectorized loop over the axis
  before it (_tile_narrow); one that reads a single tensor whose
  contiguous axis is another output axis (a transpose) is tiled in
  squares of both (tile_transpose);
* a *GEMM* (a float sum over one axis of A[.., i, k] * B[.., k, j] or
  B[.., j, k]: matmul, batch_matmul, dense with enough rows, and a 1x1
  NHWC conv of a short width, as a GEMM over its flattened h*w rows): the
  register-tiled micro-kernel of schedules_gemm.py (B[.., j, k] packed
  into column panels first), with any elementwise epilogue;
* a *row reduction* (every read that uses a reduce axis indexes its last
  dimension with the innermost reduce axis and nothing else: softmax's max
  and sum, the moments of layer_norm, dense with few rows): the spatial
  axes fused into one
  parallel loop, the reduce axes inside, the innermost one vectorized
  through ``te.pragma {llvm_vectorize = W}`` (W lanes of partial sums and
  a horizontal sum at the end: the LLVM codegen's hint);
* any other reduction (conv2d, dense over a batch, pooling) is register
  blocked.  Its output is tiled: outer axes fused into a parallel loop;
  inside it, the last axis split by the vector width (vectorized) and, when
  a read that makes the vector loads (one that depends on the last axis)
  does not depend on some other spatial axis (the output channels of an
  NCHW conv, the width of an NHWC conv), the innermost such axis split by
  16, 8, 7, 6 or 4 and unrolled (when none divides it, the one that covers
  most of it, the block loop serial and its partial last tile split off
  by tir-loop-partition); the last axis is split by two vectors
  per row of the tile when that gives more accumulators and some read is
  broadcast along the row (tile_shape, wide_rows: not a depthwise conv).
  Tiles are sized to the target's vector registers (VectorUnit: AVX2 has
  16 of 8 floats, of which a tile takes 12; AVX-512 32 of 16, a tile 16).
  The reduction
  is computed at the parallel loop into a local tile (``te.cache_write``
  when it is itself the output, or the reduction stage when elementwise
  stages follow up to one output: conv + bias + relu), reduce axes outside
  the tile's blocked and vector axes, the ones that index a read's last
  dimension innermost (an NHWC conv's input channels: its broadcast loads
  then walk memory in order).  The tile's accumulators then live in
  registers: each vector load feeds up to 16 FMAs.  An output
  reduction with nothing to block but a vector axis (pooling) is cached
  the same way, its one vector accumulator in a register.  When the
  epilogue is not pointwise (different shape or indices) the reduction is
  tiled at root the same way, accumulating in memory.

A compute the heuristics do not recognise still gets the elementwise
tiling: the schedule never fails on a well-formed te.func.

The schedule is an AutoTVM template (docs/autotvm.md): each tile size it
picks is written as a knob, ``#tune.knob<"STAGE.NAME", [CANDIDATES],
CHOICE>``, whose default is the choice above and whose other candidates are
the sizes that divide the axis (so every config is as legal as the
default): ``vector`` (the split of the last axis), ``block`` (the blocked
axis), ``rows`` / ``cols`` (a GEMM tile), ``lanes`` (a row reduction's
vector pragma).  Untuned, every knob takes its default: the build is
exactly the schedule described here.  The structure (what is packed,
inlined, blocked, computed where) stays the heuristics' choice.
"""

from __future__ import annotations

import functools

from ...dialects.te.builder import ScheduleBuilder
from ...dialects.te.ops import ComputeOp, IntrinOp, ReadOp
from ...ir.attributes import DialectAttr

BLOCKS = (16, 14, 8, 7, 6, 4)   # ragged register blocks (block_factor)
# A smaller exact divisor leaves too few accumulators to hide the FMA
# latency; a ragged block of BLOCKS does better
MIN_EXACT_BLOCK = 5


def vector_factor(n):
    return next((f for f in (16, 8, 4) if n % f == 0), None)


# the sizes a knob offers besides its default, those that divide the axis
VECTOR_CANDIDATES = (4, 8, 16, 32, 64)
BLOCK_CANDIDATES = (1, 2, 3, 4, 6, 7, 8, 12, 14, 16)
LANE_CANDIDATES = (4, 8, 16, 32)


@functools.lru_cache(maxsize=None)
def vector_unit(target: str):
    """The target's SIMD registers (backend/llvm/target.py: VectorUnit)."""
    from ...backend.spec import parse_target
    return parse_target(target).vector_unit()


def knob(stage, name, default, candidates, extent=None):
    """The value a schedule op takes: a #tune.knob named STAGE.NAME whose
    default is `default` and whose other candidates are those of
    `candidates` that divide `extent` (all of them when it is None); the
    plain number when that leaves no choice."""
    cands = {c for c in candidates if extent is None or (c <= extent and extent % c == 0)} | {default}
    if len(cands) == 1:
        return default
    return DialectAttr("tune.knob", (f"{stage.name or 'stage'}.{name}", tuple(sorted(cands)), default))


def output_computes(outputs):
    """The te.compute ops that define `outputs`, once each, in order (a
    returned parameter has none)."""
    outs = []
    for v in outputs:
        d = v.defining_op()
        if isinstance(d, ComputeOp) and d not in outs:
            outs.append(d)
    return outs


def default_schedule(e, outputs, target="llvm"):
    """Append schedule ops to e's block (the te.func body) for `outputs`,
    tiles sized for `target`'s vector registers.  A stage the schedule
    rewrites (flatten_rows, pad_gemm) is replaced in the list `outputs` too, which
    the caller then returns."""
    from .schedules_gemm import (flatten_rows, gemm_plan, pack_gemm_operand, pad_gemm, pad_packed_columns,
                                 prefetch_panels, rows_serial, tile_gemm)
    vu = vector_unit(target)
    s = ScheduleBuilder(e)
    computes = [op for op in e.block.ops if isinstance(op, ComputeOp)]
    gemms, packs, padded = {}, {}, {}
    for c in computes:
        if c.reducer is None:
            continue
        deps = _index_deps(c)
        plan = gemm_plan(c, deps, vu)
        flat = flatten_rows(e, c, deps, vu) if plan is None else None
        if flat is not None:
            old, (c, copy) = c.results[0], flat
            outputs[:] = [copy if v is old else v for v in outputs]
            deps = _index_deps(c)
            plan = gemm_plan(c, deps, vu)
        # (the flattened GEMM's columns may still end inside a panel)
        rewrite = pad_gemm(e, c, deps, vu) if plan is None else pad_packed_columns(e, c, plan)
        if rewrite is not None:
            old, (c, copy, plan) = c.results[0], rewrite
            outputs[:] = [copy if v is old else v for v in outputs]
            padded[c] = copy.type.shape
        if plan is not None:
            _, b_read, kind, mb, nb = plan
            pack = pack_gemm_operand(e, c, b_read, nb, kind) if kind else None
            gemms[c] = (mb, nb, c in padded, pack)
            if pack is not None:
                packs[pack] = c
    computes = [op for op in e.block.ops if isinstance(op, ComputeOp)]   # with the stages added
    outs = output_computes(outputs)
    pads = {}   # reduction -> the padding it reads, computed at its tile
    for c in computes:
        if c not in outs and c.reducer is None:
            if c in packs:
                mb, nb, pad, _ = gemms[packs[c]]
                if not rows_serial(packs[c].tensor_type.shape, mb, nb, pad):   # else tile_gemm packs per panel
                    tile(s, Stage(s, c), None, vu)
            elif is_padding(c, computes):
                reader = padding_per_tile(c, computes)
                if reader is not None:
                    pads[reader] = c
                else:
                    tile(s, Stage(s, c), None, vu)
            elif shared_transcendental(c, computes):
                tile(s, Stage(s, c), None, vu)
            else:
                s.compute_inline(c.results[0])
    epilogue = {}
    for c in computes:
        if c.reducer is not None and c not in outs:
            if c in gemms:
                # a padded GEMM narrower than its one panel (MobileNet v2's
                # 24-channel 1x1 convs in a panel of 32) is computed whole at
                # the root: at its epilogue's tiles it would take their 24
                # columns (vectors of 24 lanes: shuffles, 21 GFLOP/s against 130)
                narrow = c in padded and padded[c][-1] < gemms[c][1]
                o = None if narrow else pointwise_consumer(c, computes, outs, padded.get(c))
                if o is not None and o not in epilogue:
                    epilogue[o] = c
                else:
                    tile_gemm(s, Stage(s, c), *gemms[c])
                    prefetch_panels(s, Stage(s, c))
                continue
            if row_reduction(c):
                tile_row_reduction(s, c)
                continue
            o = pointwise_consumer(c, computes, outs) if c.rank else None
            if o is not None and o not in epilogue:
                epilogue[o] = c
            else:
                tile(s, Stage(s, c), block_axis(c, vu), vu, wide_rows(c), columns_outer(c))
                prefetch_panels(s, Stage(s, c))
    for o in outs:
        anchor = epilogue.get(o)
        if anchor is None and o in gemms:
            local = _tile_cached(s, o, lambda st: tile_gemm(s, st, *gemms[o]), o.rank - 2, pads.pop(o, None),
                                 vec=True)
            prefetch_panels(s, local)
            continue
        if anchor in gemms:
            f = tile_gemm(s, Stage(s, o), *gemms[anchor])
            s.compute_at(anchor.results[0], f)
            local = Stage(s, anchor)
            tile_local(s, local, anchor.rank - 2, vec=True)
            prefetch_panels(s, local)
            continue
        if anchor is None and o.reducer is not None:
            if row_reduction(o):
                tile_row_reduction(s, o)
                continue
            block = block_axis(o, vu)
            if block is not None or (o.rank > 1 and vector_factor(o.tensor_type.shape[-1])):
                # (unblocked: pooling) the vector accumulator still in a register
                local = _tile_cached(s, o, lambda st: tile(s, st, block, vu, wide_rows(o), columns_outer(o),
                                                           outer_only=block is None), block, pads.pop(o, None))
                prefetch_panels(s, local)
                continue
        if anchor is None and o.reducer is None:
            a = transposed_axis(o)
            if a is not None:
                tile_transpose(s, Stage(s, o), a)
                continue
        c = anchor if anchor is not None else o
        block = block_axis(c, vu)
        f = tile(s, Stage(s, o), block, vu, wide_rows(c), columns_outer(c),
                 outer_only=anchor is None and o.reducer is None)
        if anchor is not None:
            s.compute_at(anchor.results[0], f)
            local = Stage(s, anchor)
            _pad_at(s, pads.pop(anchor, None), tile_local(s, local, block))
            prefetch_panels(s, local)
    for pad in pads.values():   # readers tiled some other way: the padding at root
        tile(s, Stage(s, pad), None, vu)


def _tile_cached(s, o, tile_fn, block, pad=None, vec=None):
    """Accumulate reduction output `o` in a local tile (registers) computed
    at the parallel loop `tile_fn` makes of the copy-out, which runs once;
    `pad`: o's padding stage, computed at the tile (padding_per_tile).
    Returns the local stage."""
    cache = _cache_write(s, o)
    s.e.block.append(cache)
    cache.results[0].name = f"{o.results[0].name or 'out'}.local"
    local = Stage(s, o, cache.results[0])
    f = tile_fn(Stage(s, o, spatial_only=True))
    s.compute_at(local.value, f)
    _pad_at(s, pad, tile_local(s, local, block, vec))
    return local


def _pad_at(s, pad, axis):
    """Compute padding stage `pad` at `axis` (the outermost loop of a
    local tile), its channels vectorized."""
    if pad is None:
        return
    s.compute_at(pad.results[0], axis)
    s.vectorize(Stage(s, pad).axes(s)[-1])


class Stage:
    """A stage to schedule: the compute `c` that defines its shape and
    reduction, and the value the schedule ops name (the compute's result,
    or its cache).  After a cache_write the output stage is a copy: only its
    spatial axes remain."""

    def __init__(self, s, c, value=None, spatial_only=False):
        self.c = c
        self.value = value if value is not None else c.results[0]
        self.spatial_only = spatial_only
        self.rank = c.rank
        self.shape = c.tensor_type.shape

    def axes(self, s):
        names = [a.name for a in self.c.body.args]
        if self.spatial_only:
            names = names[:self.rank]
        return list(s._op("te.axes", [self.value], len(names), names))


def _cache_write(s, c):
    from ...ir.registry import get_op_class
    v = c.results[0]
    return get_op_class("te.cache_write")([v], [v.type], {"scope": "local"}, (), s.e.loc)


def padding_per_tile(c, computes):
    """The reduction that reads padding stage `c` (is_padding) only through windows of
    its own output axes (a depthwise conv or a pool: every index the
    reduce axes touch also moves with an output axis, as h * s + ry does,
    and the channel is the output's own), or None.  Its tile then pads just the input it reads,
    in cache, where a stage of its own is one more pass over the whole
    input: a memory-bound depthwise conv's time (MobileNetV2's 112x112x96
    stride-2 one: 0.67 -> 0.30 ms).  A conv whose tiles all read every
    input channel keeps the pass: padded per tile it would be copied once
    per block of output channels."""
    me = c.results[0]
    readers = [x for x in computes if any(isinstance(op, ReadOp) and op.tensor is me for op in x.body.ops)]
    if len(readers) != 1 or readers[0].reducer is None or readers[0].rank < 2:
        return None
    r = readers[0]
    deps = _index_deps(r)
    spatial = set(range(r.rank))
    for op in r.body.ops:
        if isinstance(op, ReadOp) and op.tensor is me:
            for v in op.indices:
                d = deps(v)
                if d and not d & spatial:   # a reduce axis alone walks a whole dimension (a conv's channels)
                    return None
    return r


# intrinsics a few instructions long; any other (exp, log, tanh, erf, ...) is a series or a libm call
CHEAP_INTRINSICS = frozenset({"sqrt", "rsqrt", "fabs", "floor", "ceil", "round", "trunc", "fma"})


def shared_transcendental(c, computes):
    """Whether elementwise stage `c` calls a transcendental intrinsic and
    more than one stage reads it: inlined, each reader would compute it
    again (softmax's exp(x - max), read by the sum and by the output: 3x197
    rows of 197 at one thread, 0.186 -> 0.139 ms with the exp once and the
    division a multiplication by the row's reciprocal)."""
    if not any(isinstance(op, IntrinOp) and op.attributes.get("intrin") not in CHEAP_INTRINSICS for op in c.body.ops):
        return False
    me = c.results[0]
    return sum(1 for x in computes if any(isinstance(op, ReadOp) and op.tensor is me for op in x.body.ops)) > 1


def is_padding(c, computes):
    """A stage with a guarded read (zero padding) that a reduction reads."""
    if not any(isinstance(op, ReadOp) and op.guarded for op in c.body.ops):
        return False
    me = c.results[0]
    return any(x.reducer is not None and any(isinstance(op, ReadOp) and op.tensor is me for op in x.body.ops)
               for x in computes)


def _index_deps(c):
    """deps(v): the axes (argument positions of c's body) an index value is
    made from."""
    args = list(c.body.args)
    memo = {}

    def deps(v):
        got = memo.get(v)
        if got is None:
            if v in args:
                got = {args.index(v)}
            else:
                d = v.defining_op()
                got = set()
                if d is not None and d.parent is c.body:
                    for x in d.operands:
                        got |= deps(x)
            memo[v] = got
        return got
    return deps


def read_axes(read, deps):
    """The axes (body-argument positions) any index of te.read `read` uses."""
    return set().union(*(deps(v) for v in read.indices))


def row_reduction(c):
    """Whether `c` reduces along memory: every read whose last index uses a
    reduce axis uses the innermost one there and nothing else, and some
    read does."""
    if c.reducer is None or not c.reduce_axes:
        return False
    deps = _index_deps(c)
    inner = len(c.body.args) - 1
    found = False
    for op in c.body.ops:
        if not isinstance(op, ReadOp) or not op.indices:
            continue
        last = deps(op.indices[-1])
        uses = read_axes(op, deps)
        if any(a >= c.rank for a in uses):
            # a reduce axis in an outer index only (batch_matmul's y[b, k, j])
            # strides the vector loop: that is a GEMM, not a row reduction
            if last != {inner}:
                return False
            found = True
    return found


ROW_GROUP = 4   # rows of a matrix-vector product reduced together (tile_row_reduction)


def tile_row_reduction(s, c):
    """Spatial axes fused into one parallel loop, reduce axes inside it, the
    innermost reduce axis vectorized through the llvm_vectorize pragma.
    Where some read does not depend on the last spatial axis (a matrix-vector
    product's vector: wide_rows), ROW_GROUP rows are reduced together, the
    row loop unrolled inside the reduce loop: the shared read is loaded
    once for all of them and the matrix streams from memory in ROW_GROUP
    rows at a time (ResNet-50's 2048 -> 1000 classifier, its 8 MB weight out
    of cache: 0.65 -> 0.59 ms on one core, 0.49 -> 0.43 on two)."""
    axes = Stage(s, c).axes(s)
    sp, red = axes[:c.rank], axes[c.rank:]
    group = None
    n = c.tensor_type.shape[-1] if c.rank else None
    if sp and isinstance(n, int) and n >= 2 * ROW_GROUP and wide_rows(c):
        factor = next((g for g in (ROW_GROUP, 2) if n % g == 0), None)
        if factor is not None:
            sp[-1], group = s.split(sp[-1], factor=knob(c.results[0], "rows", factor, (1, 2, 4, 8), n))
    if sp:
        f = s.fuse(*sp) if len(sp) > 1 else sp[0]
        s.parallel(f)
    if group is not None:
        s.reorder(f, *red, group)
        s.unroll(group)
    ext = c.reduce_extents[-1]
    # LLVM recognises these as reductions; others (argmax's index search, an
    # integer min over a select) it may refuse, with a remark, so they stay scalar
    if ext >= 4 and c.reducer in ("sum", "max", "min", "prod") and _is_float(c.tensor_type.element_type):
        lanes = min(16, 1 << (ext.bit_length() - 1))
        s._op("te.pragma", [red[-1]], llvm_vectorize=knob(c.results[0], "lanes", lanes,
                                                          [x for x in LANE_CANDIDATES if x <= ext]))


def _is_float(t):
    from ...ir import types as T
    return isinstance(t, T.FloatType)


# An injective stage's parallel loop fuses its outer axes only until it has
# this many iterations; the rest stay nested loops (below)
MIN_PARALLEL_ITERATIONS = 64


def tile(s, st, block, vu, wide=True, columns=False, outer_only=False):
    """Fuse the outer spatial axes into a parallel loop, vectorize the
    split-off inner part of the last, unroll the inner part of the `block`
    axis; reduce axes go in between.  `wide`: rows of two vectors may pay
    (tile_shape).  `columns`: the vector blocks of the last axis go
    outermost in the parallel loop (columns_outer).  `outer_only` (a stage
    with no reduction or block: an injective one, or the copy-out of an
    unblocked reduction such as a pool, whose local tile is computed at the
    loop returned): fuse only the outer axes whose extents make
    MIN_PARALLEL_ITERATIONS, and leave the others serial loops inside:
    each iteration of a fused loop recovers its axes by division, which per
    vector of a copy costs more than the copy (a concatenation of two
    13x13x192 tensors on one core: 40 us fused whole, 21 us with the
    channel blocks a loop of their own; a 112x112x64 3x3 max pool: 0.32
    -> 0.27 ms).
    Returns the loop a tile is computed at: the parallel one, or the
    serial block loop inside it when the block is ragged (None for a
    rank-0 stage)."""
    rank = st.rank
    if rank == 0:
        return None
    axes = st.axes(s)
    sp, red = axes[:rank], axes[rank:]
    vf, bf = vector_factor(st.shape[-1]), None
    if vf and block is not None:
        vf, bf = tile_shape(st.shape[-1], st.shape[block], vu, wide)
    inner = []
    if vf:
        sp[-1], li = s.split(sp[-1], factor=knob(st.value, "vector", vf, VECTOR_CANDIDATES, st.shape[-1]))
        inner = [li]
        if bf is not None:
            sp[block], bi = s.split(sp[block], factor=knob(st.value, "block", bf, BLOCK_CANDIDATES,
                                                           st.shape[block]))
            inner.insert(0, bi)
    elif st.shape[-1] >= 4 and rank > 1 and not red:
        inner = [sp.pop()]    # vectorized whole: LLVM adds the remainder loop
    elif rank > 1 and not red:
        return _tile_narrow(s, sp)
    # A ragged block loop stays serial, innermost of the outer loops, so
    # that tir-loop-partition can split its partial last tile off (a guard
    # inside the fused parallel loop would stay in every tile).
    serial = [sp.pop(block)] if bf is not None and st.shape[block] % bf else []
    moved = bool(columns and vf and len(sp) > 1)
    if moved:
        sp.insert(0, sp.pop())
    if red or len(inner) > 1 or moved:
        s.reorder(*sp, *serial, *memory_order(st.c, red), *inner)
    if outer_only and not red and not serial and not moved and len(inner) <= 1:
        ext = list(st.shape[:len(sp)])
        if inner and vf:
            ext[-1] = -(-ext[-1] // vf)
        n, take = 1, 0
        while take < len(sp) and n < MIN_PARALLEL_ITERATIONS:
            n *= ext[take] if isinstance(ext[take], int) else MIN_PARALLEL_ITERATIONS
            take += 1
        sp = sp[:max(take, 1)]
    f = s.fuse(*sp) if len(sp) > 1 else sp[0]
    s.parallel(f)
    if len(inner) > 1:
        s.unroll(inner[0])
    if inner:
        s.vectorize(inner[-1])
    return serial[0] if serial else f


def transposed_axis(c):
    """For an elementwise stage that reads one tensor: the output axis a
    that indexes the read's last (contiguous) dimension, when that is not
    the output's last axis and both are a vector or more long (a transpose,
    or NHWC -> NCHW), else None.  Vectorized along the output's last axis
    alone, each vector would gather from rows a whole input row apart."""
    if c.reducer is not None or c.rank < 2:
        return None
    reads = [op for op in c.body.ops if isinstance(op, ReadOp)]
    if len(reads) != 1 or not reads[0].indices or reads[0].guarded:
        return None
    deps = _index_deps(c)
    d = deps(reads[0].indices[-1])
    last = c.rank - 1
    if len(d) != 1 or last in d:
        return None
    (a,) = d
    shape = c.tensor_type.shape
    if a >= c.rank or not vector_factor(shape[a]) or not vector_factor(shape[last]):
        return None
    return a


def tile_transpose(s, st, a):
    """Tile a transposing stage (transposed_axis) in squares: the output's
    last axis and axis `a` split by a vector each, both block loops fused
    into the parallel loop with the other axes, `a`'s inner part unrolled
    and the last one vectorized.  A square reads as many input rows as it
    writes output rows, all of them in cache (NHWC -> NCHW of 56x56x256
    on one core: 5.3 ms -> 0.39 ms)."""
    axes = st.axes(s)
    last = st.rank - 1
    shape = st.shape
    lo, li = s.split(axes[last], factor=knob(st.value, "vector", vector_factor(shape[last]), VECTOR_CANDIDATES,
                                             shape[last]))
    ao, ai = s.split(axes[a], factor=knob(st.value, "block", vector_factor(shape[a]), VECTOR_CANDIDATES, shape[a]))
    outer = [x for i, x in enumerate(axes[:last]) if i != a] + [ao, lo]
    s.reorder(*outer, ai, li)
    f = s.fuse(*outer)
    s.parallel(f)
    s.unroll(ai)
    s.vectorize(li)
    return f


def _tile_narrow(s, sp):
    """An elementwise stage whose last axis is too short for a vector (the
    3 channels of an image in NHWC, or its zero padding): that axis
    unrolled innermost, the one before it vectorized whole (its accesses
    then are the other layout's rows, or runs of the same few channels,
    which LLVM's vectorizer interleaves), the rest fused into the parallel
    loop.  Fusing the short axis into the parallel loop instead costs a
    division per element (NCHW to NHWC of an image: 10x slower)."""
    last = sp.pop()
    vec = sp.pop() if len(sp) > 1 else None
    f = s.fuse(*sp) if len(sp) > 1 else sp[0]
    s.parallel(f)
    if vec is not None:
        s.vectorize(vec)
    s.unroll(last)
    return f


def tile_shape(n_vec, n_block, vu, wide=True, ragged=True):
    """(vector width, block factor) of a register tile over a last axis of
    n_vec and a blocked axis of n_block: the one with the most accumulators
    that fit in the registers (rows of two vectors first: half the loads
    per FMA); block None when no factor fits.  Rows of two vectors only when
    `wide`: they save loads only when some read is one broadcast per row
    (wide_rows); without one (a depthwise conv) every FMA needs its own
    loads, and the registers are better spent on more rows and the kernel's
    taps.  `ragged`: whether a block factor may leave a partial tile
    (block_factor)."""
    best, most = (vector_factor(n_vec), None), 0
    for vf in (2 * vu.lanes, vu.lanes, vector_factor(n_vec)):
        if not vf or n_vec % vf or (vf > vu.lanes and not wide):
            continue
        per_row = -(-vf // vu.lanes)
        bf = block_factor(n_block, per_row, vu, ragged)
        if bf is not None and bf * per_row > most:
            best, most = (vf, bf), bf * per_row
    return best


def tile_local(s, st, block, vec=None):
    """A reduction computed at its consumer's tile: reduce axes outside the
    tile's blocked and last axes; the last one vectorized, the blocked one
    unrolled, when the tile has them.  `vec`: whether the tile's columns
    are whole vectors (by default, whether the stage's are; a GEMM's tile
    is whole panels even where its columns end inside the last, an LM
    head's 50257).  Returns its outermost loop."""
    rank = st.rank
    axes = st.axes(s)
    sp, red = axes[:rank], axes[rank:]
    if vec is None:
        vec = vector_factor(st.shape[-1]) is not None
    inner = [sp[-1]]
    if vec and block is not None:
        inner.insert(0, sp[block])
    s.reorder(*[a for a in sp if a not in inner], *memory_order(st.c, red), *inner)
    if len(inner) > 1:
        s.unroll(inner[0])
    if vec:
        s.vectorize(inner[-1])
    return ([a for a in sp if a not in inner] or inner)[0]


def memory_order(c, red):
    """The reduce-axis handles `red` of `c`, those that index the last
    dimension of a read moved innermost (an NHWC conv's channels: the
    broadcast loads then walk memory in order), else as declared."""
    deps = _index_deps(c)
    last = set()
    for op in c.body.ops:
        if isinstance(op, ReadOp) and op.indices:
            last |= deps(op.indices[-1])
    rank = c.rank
    flags = [(rank + i) in last for i in range(len(red))]
    return [h for h, f in zip(red, flags) if not f] + [h for h, f in zip(red, flags) if f]


def accumulators(rows, width, vu):
    """Vector registers a register tile of `rows` rows of `width` lanes holds."""
    return rows * -(-width // vu.lanes)


def block_factor(n, per_row, vu, ragged=True):
    """The blocking factor for an axis of extent n when each row of the
    tile takes `per_row` vector registers: the largest divisor of n that
    keeps the tile within the target's accumulators (a GEMM's,
    VectorUnit.gemm_accumulators, for rows of two vectors or more: they
    broadcast one operand, so taller tiles save loads; 3x3 convs of ResNet
    at 56, 28 and 14 pixels: 8% faster with 14 x 32 than 8 x 32), when it
    is MIN_EXACT_BLOCK or more (SqueezeNet's rows of 13, 27 and 55 pixels:
    13, 9 and 11).  Else, when `ragged`, the one of BLOCKS that covers most
    of n with whole tiles, weighted by its size (111: 14, seven tiles and
    a partial one); tile() then leaves the block loop serial, and
    tir-loop-partition splits the partial last tile off."""
    limit = (vu.gemm_accumulators if per_row > 1 else vu.accumulators) // per_row
    exact = max((f for f in range(MIN_EXACT_BLOCK, min(n, limit) + 1) if n % f == 0), default=None)
    if exact is not None:
        return exact
    if 2 <= n < MIN_EXACT_BLOCK and n <= limit:
        # the whole axis (a 4x4 map's width): no block of BLOCKS is smaller
        # than it, and one pixel per tile left ResNet's last stage at 64 to
        # 128 px (4x4x512 3x3) on a single accumulator, 2 GFLOP/s
        return n
    if not ragged:
        return None
    return max((f for f in BLOCKS if f <= limit and f < n), key=lambda f: (f * (n // f), f), default=None)


def columns_outer(c):
    """Whether the reads of reduction `c` that depend on its last axis and
    on no other output axis (a conv's weights, per output channel) hold
    more bytes than those that depend on the other output axes (its input;
    a depthwise conv's input depends on both): then the vector blocks of the last axis go outermost
    in the parallel loop, so that each block's slice of the weights stays
    in cache while every pixel uses it.  Innermost (the default order),
    the whole weight streams through once per row of pixels: ResNet's
    7x7x512 3x3 conv (9.4 MB of weights packed OHWI32o, 100 KB of input)
    ran at 84 GFLOP/s on one core that way, 136 with the blocks outermost
    (14x14x256: 110 -> 155)."""
    if c.reducer is None or c.rank < 2:
        return False
    deps = _index_deps(c)
    rows = set(range(c.rank - 1))
    per_column = other = 0
    for op in c.body.ops:
        if isinstance(op, ReadOp) and op.tensor.type.is_static:
            size = op.tensor.type.num_elements() * op.tensor.type.element_type.bitwidth
            axes = read_axes(op, deps)
            if c.rank - 1 in axes and not axes & rows:
                per_column += size
            elif axes & rows:
                other += size
    return per_column > other


def wide_rows(c):
    """Whether some read of reduction `c` does not depend on its last axis:
    a value broadcast to the whole row of a register tile (the input pixel
    of a conv, A[i, k] of a GEMM), so a row of two vectors loads it once
    for both."""
    if c.reducer is None or c.rank < 1:
        return True
    deps = _index_deps(c)
    last = c.rank - 1
    for op in c.body.ops:
        if isinstance(op, ReadOp) and last not in read_axes(op, deps):
            return True
    return False


def block_axis(c, vu):
    """The spatial axis to block (see the module docstring), or None."""
    rank = c.rank
    shape = c.tensor_type.shape
    if c.reducer is None or rank < 2 or vector_factor(shape[-1]) is None:
        return None
    deps = _index_deps(c)
    reads = []
    for op in c.body.ops:
        if isinstance(op, ReadOp):
            used = set()
            for v in op.operands[1:]:
                used |= deps(v)
            reads.append(used)
    vector_reads = [r for r in reads if rank - 1 in r]
    for d in reversed(range(rank - 1)):
        if block_factor(shape[d], 1, vu) and any(d not in r for r in vector_reads):
            return d
    return None


def pointwise_consumer(d, computes, outs, shape=None):
    """The one output that reads `d` element for element, through stages
    that do the same (all of which get inlined); None otherwise.  `shape`:
    theirs, when it is only a corner of d's (a pad_gemm's copy-out)."""
    reach = {d.results[0]}
    shape = shape or d.tensor_type.shape
    for x in computes[computes.index(d) + 1:]:
        reads = [op for op in x.body.ops if isinstance(op, ReadOp) and op.tensor in reach]
        if not reads:
            continue
        if x.reducer is not None or x.tensor_type.shape != shape:
            return None
        axes = list(x.spatial_axes)
        if any(r.guarded or list(r.indices) != axes for r in reads):
            return None
        reach.add(x.results[0])
    found = [o for o in outs if o.results[0] in reach]
    return found[0] if len(found) == 1 else None
