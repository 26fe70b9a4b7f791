"""Default schedules for target cuda, written as te schedule ops.

Same contract as :func:`tvmd.conversion.relay_to_te.schedules.default_schedule`
(append schedule ops for the `outputs` of one fused group).  Per te.func:

* every stage that is neither an output nor a reduction is inlined;
* an elementwise output: all its axes fused, split by the block size
  (256, or the extent when smaller) and bound ``blockIdx.x`` /
  ``threadIdx.x``; when the block size does not divide the extent the
  lowering guards the tail (``if fused < extent``)::

      %f = te.fuse %i, %j ;  %bx, %tx = te.split %f {factor = 256}
      te.bind %bx {thread = "blockIdx.x"} ;  te.bind %tx {thread = "threadIdx.x"}

* a reduction output of rank >= 2 (dense, matmul, conv2d, pooling): a 2-d
  thread block over the outputs -- the last axis split by 16 onto
  ``threadIdx.x`` / ``blockIdx.x``, the other spatial axes fused and split
  by 16 onto ``threadIdx.y`` / ``blockIdx.y`` -- each thread accumulating
  one output over the reduce axes, which stay serial loops inside;
* a dense-like output (rank 2, one reduce axis, reading only the
  function's inputs, every extent a multiple of 16): the same 16 x 16
  blocks, with shared-memory tiles -- each input cached in ``shared``
  (``te.cache_read``) and computed at the outer reduce axis ``ko`` (K split
  by 16), its two axes bound to ``threadIdx.y`` / ``threadIdx.x`` so the
  block's 256 threads load a 16 x 16 tile together; ``ko`` goes outside the
  thread axes so the tile is the block's, not one thread's::

      by, bx, ko { AS[16x16], WS[16x16] (cooperative loads); ty, tx, ki { C += AS * WS } }

  The tiles' rows are padded to 17 floats (``te.storage_align``), so a
  warp reading down a column of a tile hits 16 different banks;

  ``tir-thread-sync`` then puts the barriers between the loads and the
  reads and before the next ``ko``'s loads;
* a reduction followed by a pointwise epilogue up to one output (conv +
  bias + relu): the output is bound as above and the reduction is computed
  at its ``threadIdx.x`` axis, into a one-element per-thread accumulator
  (``local`` storage, a register);
* a row reduction (softmax's max and sum, a sum over the last axis: one
  reduce axis of at least 64, an output of rank 1 or 2, or a stage another
  reads): one block per row, 32 threads cooperating.  The reduce axis is
  split by 32 and factored out (``te.rfactor``) into a ``shared`` stage
  ``RF[row, t]`` computed at the row's block axis, ``t`` bound to
  ``threadIdx.x``: thread t accumulates elements t, t+32, ... (coalesced
  loads); then one thread (a ``threadIdx.x`` loop of extent 1) combines the
  32 partial results::

      blockIdx.x = row { RF[32] shared; threadIdx.x = t { RF[t] = sum_ko A[row, ko*32 + t] }
                         barrier; threadIdx.x < 1 { R[row] = sum_t RF[t] } }

* any other reduction (several reduce axes, short rows, rank > 2, a
  consumer that is not pointwise): bound at root, one thread per output
  element as for an elementwise stage.  A stage bound at root is a kernel
  of its own (``tir-split-host-device``).  A rank-0 reduction runs on one
  thread.

The final combine of a row reduction is serial (32 steps on one thread),
not a tree or warp shuffle.

The schedule is an AutoTVM template (docs/autotvm.md), as the llvm one is
(schedules.py, whose ``knob`` helper this uses): each number above that can
vary without changing the schedule's structure is a knob,
``#tune.knob<"STAGE.NAME", [CANDIDATES], DEFAULT>``, whose default is the
number above (so an untuned build is exactly this schedule) and whose
other candidates keep every config legal, with at most 1024 threads a
block:

* ``STAGE.threads`` of an elementwise (or root-bound) stage: the block
  size, 256 (the extent when smaller); 64, 128, 256, 512, 1024 up to the
  fused extent (the tail is guarded whatever the size);
* ``STAGE.tile_y``, ``STAGE.tile_x`` of a 2-d thread block: 16 (the extent
  when smaller); 8, 16, 32 up to the fused rows / the last axis, and
  ``tile_y`` leaving at most 65535 blocks down the grid (32 x 32 = 1024);
* ``STAGE.tile`` of a shared-tiled dense: ONE knob for both sides of the
  thread block (the i and j splits), 16; 8, 16, 32 dividing M and N.  A
  tile's row count is the block's side by construction (the region the
  block reads), and the cooperative loads bind both tiles' rows to
  threadIdx.y: the A tile has as many rows as the block, the W tile as
  many as it has columns.  Two sizes would make a block of the larger
  side squared with threads idle in the compute or the loads; one name,
  used in both splits, keeps the block the output tile;
* ``STAGE.k``: the K split, i.e. the tiles' row length, 16; 8, 16, 32
  dividing K.  The same knob is the ``storage_align`` factor, so a padded
  row is one element longer than the tile's (``k + 1``).  The loads bind
  that row to threadIdx.x: with ``k`` > ``tile`` the block is ``k`` x
  ``tile`` threads and the compute is guarded to ``tile`` x ``tile``; with
  ``k`` < ``tile`` part of the block loads;
* ``CACHE.pad`` of each shared tile: the ``storage_align`` offset, 1 (rows
  padded by one element); 0 (unpadded);
* ``STAGE.threads`` of a row reduction: the threads per row, 32; 32, 64,
  128, 256 up to the row.  The factored stage's type (``te.rfactor``'s
  result) spells the default; autotvm.space.instantiate retypes it with a
  config's thread count.

What stays fixed, and why:

* the 16 in the shared-tile test (M, N and K multiples of 16) and MIN_ROW
  (64): they choose which schedule a stage gets (its structure), not a
  size within it; a size that did not divide M, N or K would put tails,
  and barriers under guards, in the shared-tile kernel (so those knobs
  offer only divisors);
* the split by 1 that puts a row reduction's combine on thread 0, and
  the limits of CUDA (65535 blocks in y, 1024 threads a block).
"""

from __future__ import annotations

import math

from ...dialects.te.builder import ScheduleBuilder
from ...dialects.te.ops import ComputeOp, ReadOp
from .schedules import knob, output_computes, pointwise_consumer

THREADS = 256        # threads per block for 1-d kernels (the default of STAGE.threads)
WARP = 32            # threads cooperating on one row of a row reduction (the default of STAGE.threads)
MIN_ROW = 64         # shorter rows: one thread per row
TILE = 16            # 16 x 16 threads per block for 2-d output tiles (the default of the tile knobs)
PAD = 1              # a shared tile's row padding: stride = 1 mod its row length (the default of CACHE.pad)
MAX_GRID_Y = 65535   # CUDA's limit on gridDim.y (and z)
MAX_THREADS = 1024   # CUDA's limit on the threads of a block

# the values a knob offers besides its default (see the module docstring)
THREAD_CANDIDATES = (64, 128, 256, 512, 1024)   # a 1-d kernel's block, at most the extent
TILE_CANDIDATES = (8, 16, 32)                   # a side of a 2-d thread block or of a shared tile
ROW_THREAD_CANDIDATES = (32, 64, 128, 256)      # a row reduction's block, at most the row
PAD_CANDIDATES = (0, 1)                         # a shared tile's rows unpadded, or one element longer


def default_schedule(e, outputs):
    """Append CUDA schedule ops to e's block (the te.func body) for `outputs`."""
    from .schedules_cuda_attention import attention_schedule_cuda, is_attention
    if is_attention(e, outputs) and attention_schedule_cuda(e, outputs):
        return
    s = ScheduleBuilder(e)
    computes = [op for op in e.block.ops if isinstance(op, ComputeOp)]
    outs = output_computes(outputs)
    for c in computes:
        if c not in outs and c.reducer is None:
            s.compute_inline(c.results[0])
    epilogue = {}
    for c in computes:
        if c.reducer is not None and c not in outs:
            o = pointwise_consumer(c, computes, outs) if c.rank else None
            if o is not None and o not in epilogue:
                epilogue[o] = c
            elif not row_reduce(s, c):
                bind(s, c)
    for o in outs:
        anchor = epilogue.get(o)
        if anchor is None and (shared_tiled(s, o) or (o.rank <= 2 and row_reduce(s, o))):
            continue
        tx = bind(s, o, tile2d=(anchor or o).reducer is not None)
        if anchor is not None and tx is not None:
            s.compute_at(anchor.results[0], tx)


def bind(s, c, tile2d=None):
    """Bind stage `c`'s spatial axes to blocks and threads; its reduce axes
    stay serial, innermost.  Returns the innermost thread axis (the one a
    producer is computed at), or None for a rank-0 stage."""
    rank = c.rank
    if rank == 0:
        return None
    if tile2d is None:
        tile2d = c.reducer is not None
    shape = c.tensor_type.shape
    axes = s.axes(c.results[0])
    sp, red = axes[:rank], axes[rank:]
    rows = 1
    for n in shape[:-1]:
        rows *= n
    stage = c.results[0]
    fy = min(TILE, rows)
    if tile2d and rank >= 2 and -(-rows // fy) <= MAX_GRID_Y:
        # a side of 8, 16 or 32 (at most 32 x 32 = MAX_THREADS threads), no
        # longer than the axis, and few enough blocks down the grid's y
        row = s.fuse(*sp[:-1]) if rank > 2 else sp[0]
        by, ty = s.split(row, factor=knob(stage, "tile_y", fy, [t for t in TILE_CANDIDATES
                                                                if t <= rows and -(-rows // t) <= MAX_GRID_Y]))
        fx = min(TILE, shape[-1])
        bx, tx = s.split(sp[-1], factor=knob(stage, "tile_x", fx, [t for t in TILE_CANDIDATES if t <= shape[-1]]))
        s.reorder(by, bx, ty, tx, *red)
        s.bind(by, "blockIdx.y")
        s.bind(bx, "blockIdx.x")
        s.bind(ty, "threadIdx.y")
        s.bind(tx, "threadIdx.x")
        return tx
    total = rows * shape[-1]
    f = s.fuse(*sp) if rank > 1 else sp[0]
    bx, tx = s.split(f, factor=knob(stage, "threads", min(THREADS, total),
                                    [t for t in THREAD_CANDIDATES if t <= min(total, MAX_THREADS)]))
    if red:
        s.reorder(bx, tx, *red)
    s.bind(bx, "blockIdx.x")
    s.bind(tx, "threadIdx.x")
    return tx


def shared_tiled(s, c):
    """The shared-memory tiled schedule of a dense-like stage (see the
    module docstring); False, adding nothing, when `c` is not one."""
    if c.reducer is None or c.rank != 2 or len(c.reduce_extents) != 1:
        return False
    (m, n), (kk,) = c.tensor_type.shape, c.reduce_extents
    if any(x % TILE for x in (m, n, kk)):
        return False   # a tail would put barriers under guards only some threads pass
    func_args = set(s.e.block.args)
    reads = [op for op in c.body.ops if isinstance(op, ReadOp)]
    tensors = []
    for r in reads:
        if r.tensor not in func_args or r.guarded:
            return False
        if r.tensor not in tensors:
            tensors.append(r.tensor)
    if len(tensors) != 2:
        return False
    from ...ir.registry import get_op_class
    cache_read = get_op_class("te.cache_read")
    if cache_read is None:
        return False
    caches = []
    for t in tensors:
        op = cache_read([t, c.results[0]], [t.type], {"scope": "shared"}, (), s.e.loc)
        s.e.block.append(op)
        op.results[0].name = (t.name or "in") + "_shared"
        caches.append(op.results[0])
    # one knob for the block's two sides: the tiles' rows are loaded by the
    # same threads that compute (their extents must divide M, N and K: no tails)
    stage = c.results[0]
    tile = knob(stage, "tile", TILE, TILE_CANDIDATES, math.gcd(m, n))
    ktile = knob(stage, "k", TILE, TILE_CANDIDATES, kk)
    i, j, k = s.axes(stage)
    by, ty = s.split(i, factor=tile)
    bx, tx = s.split(j, factor=tile)
    ko, ki = s.split(k, factor=ktile)
    s.reorder(by, bx, ko, ty, tx, ki)
    s.bind(by, "blockIdx.y")
    s.bind(bx, "blockIdx.x")
    s.bind(ty, "threadIdx.y")
    s.bind(tx, "threadIdx.x")
    align = get_op_class("te.storage_align")
    for cache in caches:
        s.compute_at(cache, ko)
        if align is not None:   # rows of 17: the threads of a warp reading a column hit distinct banks
            s.e.block.append(align([cache], [], {"axis": 0, "factor": ktile,
                                                 "offset": knob(cache, "pad", PAD, PAD_CANDIDATES)}, (), s.e.loc))
        a0, a1 = s._op("te.axes", [cache], 2, ["ax0", "ax1"])   # a cache stage: the tensor's rank
        s.bind(a0, "threadIdx.y")
        s.bind(a1, "threadIdx.x")
    return True


def row_reduce(s, c):
    """The cooperative row-reduction schedule (see the module docstring);
    False, adding nothing, when `c` is not a row reduction it handles."""
    from ...ir import types as T
    from ...ir.registry import get_op_class
    rank = c.rank
    red = list(c.reduce_extents)
    if c.reducer not in ("sum", "prod", "max", "min") or len(red) != 1 or red[0] < MIN_ROW:
        return False
    shape = list(c.tensor_type.shape)
    if rank not in (1, 2) or (rank == 2 and shape[0] > MAX_GRID_Y):
        return False
    rfactor, set_scope = get_op_class("te.rfactor"), get_op_class("te.set_scope")
    if rfactor is None or set_scope is None:
        return False
    axes = s.axes(c.results[0])
    threads = knob(c.results[0], "threads", WARP, [t for t in ROW_THREAD_CANDIDATES if t <= red[0]])
    _, ki = s.split(axes[rank], factor=threads)
    # the factored stage's type says the default thread count;
    # autotvm.space.instantiate retypes it for a config
    cf_t = T.TensorType(shape + [WARP], c.tensor_type.element_type)
    op = rfactor([c.results[0], ki], [cf_t], {"factor_axis": rank}, (), s.e.loc)
    s.e.block.append(op)
    cf = op.results[0]
    cf.name = (c.results[0].name or "red") + "_rf"
    s.e.block.append(set_scope([cf], [], {"scope": "shared"}, (), s.e.loc))
    sp = s._op("te.axes", [c.results[0]], rank + 1, [f"ax{d}" for d in range(rank)] + ["rf"])[:rank]
    if rank == 2:
        s.bind(sp[0], "blockIdx.y")
    bx, one = s.split(sp[-1], factor=1)
    s.bind(bx, "blockIdx.x")
    s.bind(one, "threadIdx.x")   # extent 1: the combine runs on thread 0
    s.compute_at(cf, bx)
    cf_axes = s._op("te.axes", [cf], rank + 2, [f"ax{d}" for d in range(rank)] + ["t", "ko"])
    s.bind(cf_axes[rank], "threadIdx.x")
    return True
