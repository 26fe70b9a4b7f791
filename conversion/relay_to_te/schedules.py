"""Default schedules (target llvm), written as te schedule ops.

Per fused group (one te.func):

* every stage that is neither an output nor a reduction is inlined
  (pad stages, elementwise ops before or after the anchor);
* an elementwise output: its outer axes and the outer part of the last axis
  fused into one parallel loop, the last axis split by the vector width
  (16, 8 or 4, whichever divides it first) and vectorized;
* a reduction (dense, conv2d) that is an output: tiled as above, the reduce
  axes inside the parallel loop and outside the vector loop, so each
  parallel iteration accumulates a vector of outputs.  Register blocking:
  when a read that makes the vector loads (one that depends on the last
  axis) does not depend on some other spatial axis whose extent 4 divides
  (the output channels of an NCHW conv, the rows of a dense, the width of
  an NHWC conv), the innermost such axis is split by 4 and its inner part
  unrolled between the reduction and the vector loop: each vector load
  then feeds 4 accumulators;
* a reduction followed by elementwise stages up to one output (conv +
  bias + relu): the output is tiled the same way, and the reduction
  computed at its parallel loop (compute_at) into a local tile, reduce
  axes outside the tile's (blocked, vector) axes.  When the epilogue is not
  pointwise (different shape or indices) the reduction is tiled at root.
"""

from __future__ import annotations

from ...dialects.te.builder import ScheduleBuilder


BLOCK = 4


def vector_factor(n):
    return next((f for f in (16, 8, 4) if n % f == 0), None)


def default_schedule(e, outputs):
    """Append schedule ops to e's block (the te.func body) for `outputs`."""
    s = ScheduleBuilder(e)
    computes = [op for op in e.block.ops if op.name == "te.compute"]
    outs = []
    for v in outputs:
        d = v.defining_op()
        if d is not None and d.name == "te.compute" and d not in outs:
            outs.append(d)
    for c in computes:
        if c not in outs and c.reducer is None:
            s.compute_inline(c.results[0])
    epilogue = {}
    for c in computes:
        if c.reducer is not None and c not in outs:
            o = pointwise_consumer(c, computes, outs) if c.rank else None
            if o is not None and o not in epilogue:
                epilogue[o] = c
            else:
                tile(s, c, block_axis(c))
    for o in outs:
        anchor = epilogue.get(o)
        block = block_axis(anchor if anchor is not None else o)
        f = tile(s, o, block)
        if anchor is not None:
            s.compute_at(anchor.results[0], f)
            tile_local(s, anchor, block)


def tile(s, c, block):
    """Fuse the outer spatial axes into a parallel loop, vectorize the
    split-off inner part of the last, unroll the inner part of the `block`
    axis; reduce axes go in between.  Returns the parallel axis (None for a
    rank-0 stage)."""
    rank = c.rank
    if rank == 0:
        return None
    axes = s.axes(c.results[0])
    sp, red = axes[:rank], axes[rank:]
    vf = vector_factor(c.tensor_type.shape[-1])
    inner = []
    if vf:
        sp[-1], li = s.split(sp[-1], factor=vf)
        inner = [li]
        if block is not None:
            sp[block], bi = s.split(sp[block], factor=BLOCK)
            inner.insert(0, bi)
    if red or len(inner) > 1:
        s.reorder(*sp, *red, *inner)
    f = s.fuse(*sp) if len(sp) > 1 else sp[0]
    s.parallel(f)
    if len(inner) > 1:
        s.unroll(inner[0])
    if inner:
        s.vectorize(inner[-1])
    return f


def tile_local(s, c, block):
    """A reduction computed at its consumer's tile: reduce axes outside the
    tile's blocked and last axes; the last one vectorized, the blocked one
    unrolled, when the tile has them."""
    rank = c.rank
    axes = s.axes(c.results[0])
    sp, red = axes[:rank], axes[rank:]
    vec = vector_factor(c.tensor_type.shape[-1]) is not None
    inner = [sp[-1]]
    if vec and block is not None:
        inner.insert(0, sp[block])
    s.reorder(*[a for a in sp if a not in inner], *red, *inner)
    if len(inner) > 1:
        s.unroll(inner[0])
    if vec:
        s.vectorize(inner[-1])


def block_axis(c):
    """The spatial axis to block by 4 (see the module docstring), or None."""
    rank = c.rank
    shape = c.tensor_type.shape
    if c.reducer is None or rank < 2 or vector_factor(shape[-1]) is None:
        return None
    args = list(c.body.args)
    memo = {}

    def deps(v):
        """The axes (argument positions) an index value is made from."""
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

    reads = []
    for op in c.body.ops:
        if op.name == "te.read":
            used = set()
            for v in op.operands[1:]:
                used |= deps(v)
            reads.append(used)
    vector_reads = [r for r in reads if rank - 1 in r]
    for d in reversed(range(rank - 1)):
        if shape[d] % BLOCK == 0 and any(d not in r for r in vector_reads):
            return d
    return None


def pointwise_consumer(d, computes, outs):
    """The one output that reads `d` element for element, through stages
    that do the same (all of which get inlined); None otherwise."""
    reach = {d.results[0]}
    shape = d.tensor_type.shape
    for x in computes[computes.index(d) + 1:]:
        reads = [op for op in x.body.ops if op.name == "te.read" and op.tensor in reach]
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
