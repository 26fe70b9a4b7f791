"""The GEMM path of the default llvm schedule (dense, matmul, batch_matmul
with several rows).

A reduction is a GEMM when it is a float sum over one axis k whose body
reads two tensors::

    C[.., i, j] = sum_k A[.., i, .., k] * B[.., k, j]        (B contiguous in j)
    C[.., i, j] = sum_k A[.., i, .., k] * B[.., j, k]        (dense: B is N x K)

where A does not depend on j and B does not depend on i.  The second form
(every nn.dense) would read B with a stride along j, so B is first packed,
in a stage of its own, into panels of NB columns::

    Bp[.., jo, k, ji] = B[.., jo * NB + ji, k]

and C reads ``Bp[.., j / NB, k, j % NB]``.  Either way the schedule is the
register-tiled micro-kernel of bench/schedules/matmul.te: the output tiled
MB x NB, sized to the target's vector registers (gemm_tile: AVX2's 6 x 16,
6 rows of two 8-lane vectors = 12 accumulators of 16 registers; AVX-512's
8 x 32 = 16 of 32: ROWS says why not taller), the batch axes and column blocks fused into one
parallel loop, the row blocks fused into it too or, when the columns are
enough parallel work, a serial loop inside it (MB then need not divide the
rows: tir-loop-partition splits off the partial last tile; tile_gemm), the
reduction computed at the tile into a local tile with k outside the
tile's rows (unrolled) and columns (vectorized).  Per k the kernel loads
NB/lanes vectors of B and broadcasts MB scalars of A into MB * NB/lanes
FMAs; an elementwise epilogue (bias, residual,
GELU) is applied as the tile is copied out.  Column blocks are the outer
part of the parallel loop, so a column panel of B stays in cache while all
row blocks use it.

A 1x1 conv in NHWC is this GEMM with rows (n, h, w); where w is short
(7, 14) a tile along it is small, so flatten_rows first rewrites the conv
as the GEMM over h*w rows and a copy back to NHWC.

The packing stage runs on every call (a pass over B), so the dense form is
taken only with MIN_PACK_ROWS rows or more; a dense with a constant weight
never gets here: --alter-op-layout (run by runtime.build for llvm) packs
the weight at compile time into nn.contrib_dense_pack, whose read of B is
the packed one, ``Bp[.., j / NB, k, j % NB]`` (packed_width), so that no
stage packs it again.
"""

from __future__ import annotations

import math

from ...dialects.te.builder import Emitter, compute
from ...dialects.te.ops import ReadOp
from ...ir import types as T

# Packing costs a pass over B per call; with fewer rows than this a dense
# stays a row reduction (one dot product per output, B read along k).
MIN_PACK_ROWS = 16
# A B read along j with rows this long is packed too: a column panel then
# walks k at a stride of a page or so, which the L1 cache's sets and the
# TLB take badly (1024 x 1024 matmul: about 1.4x faster packed)
MIN_PACK_COLUMNS = 512
# The tile's rows (unrolled, one broadcast of A each per k), tallest
# first.  Not taller than 8, although AVX-512's 32 registers would hold
# 14 x 32: each row is a stream of A along k, and 14 of them lost to 8
# wherever k is long.  Kernel GFLOP/s on Zen 4, 14 x 32 against 8 x 32:
# one thread, 1024^3 matmul 87 against 112, dense 512x3072x768 91 against
# 114, dense 512x768x3072 and 128x768x3072 equal; two threads, 1024^3 169
# against 214, dense 128x768x3072 216 against 229, the LM head
# 512x768x50257 211 against 222.  (A tile one vector wide does a
# broadcast per FMA, and more rows would only add loads: AVX-512, 1024^3,
# 28 x 16 ran at 80 GFLOP/s.)
ROWS = (8, 6, 4)
# flatten_rows applies below this last row axis (a 1x1 conv's output
# width): at 7 and 14 the flattened GEMM was 1.4x-1.9x faster; at 28, 56
# and 112 it was within the noise, and costs a pass over a larger output
MAX_FLAT_WIDTH = 16


def tile_rows(per_row, vu):
    """The tile heights of ROWS whose accumulators fit, tallest first, for
    rows of `per_row` vectors."""
    return [f for f in ROWS if f * per_row <= vu.gemm_accumulators]


def gemm_plan(c, deps, vu):
    """(A read, B read, pack, MB, NB) when `c` is a GEMM (module docstring),
    else None; pack is "nk" for the dense form (B to be packed), else
    None.  `deps(v)`: the body-argument positions index v uses; `vu`: the
    target's vector registers, which size the tile (gemm_tile)."""
    if c.reducer != "sum" or len(c.reduce_extents) != 1 or c.rank < 2:
        return None
    if not isinstance(c.tensor_type.element_type, T.FloatType) and not word_products(c):
        return None
    shape = c.tensor_type.shape
    rank = c.rank
    ia, ja, ka = rank - 2, rank - 1, rank
    args = list(c.body.args)
    for ra, rb, ua, ub in operand_roles(c, deps, ka):
        if ia not in ua or ia in ub:
            continue
        idx = list(rb.indices)
        m, n = shape[-2], shape[-1]
        width = packed_width(idx, args[ja], args[ka])
        if width is not None and not any(deps(v) & {ja, ka} for v in idx[:-3]):
            # B packed already (nn.contrib_dense_pack): the tile's columns are
            # its panels (a tile half a panel wide would read B through j % n);
            # columns ending inside the last, zero-padded panel (an LM head's
            # 50257) tile as whole panels, the last one's store guarded
            tile = gemm_tile(tuple(shape[:-1]) + (-(-n // width) * width,), vu, (width,))
            return None if tile is None else (ra, rb, None) + tile
        if len(idx) < 2 or any(deps(v) & {ja, ka} for v in idx[:-2]):
            continue
        if idx[-1] is args[ka] and idx[-2] is args[ja]:
            pack = "nk"
        elif idx[-1] is args[ja]:
            pack = "kn" if m >= MIN_PACK_ROWS and n >= MIN_PACK_COLUMNS else None
        else:
            continue
        tile = gemm_tile(shape, vu)
        if tile is None or (pack == "nk" and m < MIN_PACK_ROWS):
            return None
        return (ra, rb, pack) + tile
    return None


def word_products(c):
    """Whether reduction `c` sums dot4_u8s8 or dot2_bf16 of two words (a
    dense packed "NC{n}n4c" or "NC{n}n2c"): the GEMM whose multiply-add
    is vpdpbusd (on i32 lanes as many as f32's) or vdpbf16ps."""
    from ...dialects.te.ops import IntrinOp
    from ...dialects.tir.ops import WORD_INTRINSICS
    last = c.body.terminator
    y = last.operands[0].defining_op() if last is not None and last.operands else None
    return isinstance(y, IntrinOp) and y.attributes["intrin"] in WORD_INTRINSICS


# A packed weight this large is read from memory, not from cache, on every
# call in a model (other layers' weights pass through the caches between);
# its next panel is then prefetched while the current one is in use
MIN_STREAMED_BYTES = 1 << 20


def streamed_weight(c):
    """(tensor, axis, offset) when reduction `c` reads a weight packed in
    panels of n output columns, [.., j / n, r1, .., rm, j % n] with
    r1 .. rm distinct reduce axes (nn.contrib_dense_pack's [.., N/n, K, n];
    a conv's OHWI{n}o, [O/n, KH, KW, I, n]), a parameter of the kernel (a
    weight packed at compile time) of at least MIN_STREAMED_BYTES:
    the axis (its position among c's axes) that indexes the panel's rows
    last (k; a conv's input channels) and the offset along it that reaches
    the same row of the next panel (a panel's rows: K; KH * KW * I).
    Else None."""
    args = list(c.body.args)
    j, red = args[c.rank - 1], args[c.rank:]
    for op in c.body.ops:
        # a stage packed in the kernel itself (a matmul's B) was just written: in cache
        if not isinstance(op, ReadOp) or op.guarded or op.tensor.defining_op() is not None:
            continue
        idx, t = list(op.indices), op.tensor.type
        if not t.is_static or t.num_elements() * t.element_type.bitwidth // 8 < MIN_STREAMED_BYTES:
            continue
        for p in range(len(idx) - 2):
            rows = idx[p + 1:-1]
            if packed_width([idx[p], rows[0], idx[-1]], j, rows[0]) and all(v in red for v in rows) \
                    and len(set(rows)) == len(rows):
                return op.tensor, c.rank + red.index(rows[-1]), math.prod(t.shape[p + 1:-1])
    return None


def prefetch_panels(s, st):
    """Prefetch the next panel of the weight that reduction stage `st`
    streams (streamed_weight), from the loop over the panel's rows: row k
    of panel jo + 1 is row k + K of panel jo, so a te.prefetch with offset
    K reads it in step with the current panel.  Without it, the first row
    block of each panel waits on memory and the others run from cache, one
    after the other: GPT-2's LM head (64 x 768 x 50257, a 154 MB weight)
    ran at 96 GFLOP/s on one core, 120-130 with the next panel fetched
    during the current one (a C model of the kernel, bench-measured).  A
    conv's weight, out of cache as it is inside a whole model, does the
    same: ResNet's 7x7x512 3x3 conv (9.4 MB OHWI32o) took 2.7 ms on one
    core after a pass over 256 MB, 1.7 ms with it in cache."""
    w = streamed_weight(st.c)
    if w is not None:
        tensor, axis, offset = w
        s.prefetch(tensor, st.axes(s)[axis], offset)


def packed_width(idx, j, k):
    """n when a B read's last three indices are (j / n, k, j % n): a weight
    packed in panels of n columns (nn.contrib_dense_pack), the layout the
    packing stage makes; else None."""
    from ...dialects.tir.bounds import const_int
    if len(idx) < 3 or idx[-2] is not k:
        return None
    q, r = idx[-3].defining_op(), idx[-1].defining_op()
    if q is None or r is None or q.name != "arith.floordivsi" or r.name != "arith.floormodsi":
        return None
    if q.operands[0] is not j or r.operands[0] is not j:
        return None
    n = const_int(q.operands[1])
    return n if n is not None and n == const_int(r.operands[1]) else None


def operand_roles(c, deps, ka):
    """The orders (A read, B read, A's axes, B's axes) of `c`'s two
    unguarded reads that make A the row operand and B the column operand
    of a GEMM over reduce axis `ka`: A's last index is k alone and A does
    not use the output's last axis j; B uses j and k.  Which output axes
    are the rows is left to the caller."""
    from .schedules import read_axes
    reads = [op for op in c.body.ops if isinstance(op, ReadOp)]
    if len(reads) != 2 or any(r.guarded for r in reads):
        return
    ja = c.rank - 1
    used = [read_axes(r, deps) for r in reads]
    for a, b in ((0, 1), (1, 0)):
        ua, ub = used[a], used[b]
        if ka in ua and ja not in ua and deps(reads[a].indices[-1]) == {ka} and {ja, ka} <= ub:
            yield reads[a], reads[b], ua, ub


def gemm_tile(shape, vu, widths=None):
    """(MB, NB) of the register tile: NB two vectors wide (else one; or one
    of `widths`, a packed weight's panel width), MB the most of ROWS with
    MB * NB / lanes accumulators in the registers; the pair with the most
    accumulators (AVX2's 16 registers: 6 x 16, 12 accumulators; AVX-512:
    8 x 32, 16 of VectorUnit.gemm_accumulators' 28).  MB need not divide m (when m >= MIN_PACK_ROWS): the row
    loop then stays serial inside the parallel column blocks (tile_gemm),
    and tir-loop-partition splits its last, partial tile off.  That is
    taken when the column blocks (times the batch) are enough parallel
    work on their own (rows_split_ok), and otherwise only when no MB
    divides m: fewer parallel tasks, but a register tile all the same (a
    ViT's 197 rows by 192 columns: 13 GFLOP/s without one).  None when
    nothing fits.  `shape`: the output's, batch axes first."""
    m, n = shape[-2], shape[-1]
    best, most = None, 0
    for nb in widths or (2 * vu.lanes, vu.lanes):
        if n % nb:
            continue
        per_row = -(-nb // vu.lanes)
        fits = tile_rows(per_row, vu)
        dividing = [f for f in fits if m % f == 0]
        ragged = fits[:1] if m >= MIN_PACK_ROWS else []
        mb = next(iter((ragged if rows_split_ok(shape, nb) else []) + dividing + ragged), None)
        if mb is not None and mb * per_row > most:
            best, most = (mb, nb), mb * per_row
    return best


# Column blocks (times the batch) that keep the cores busy with the row
# loop left serial inside them
MIN_COLUMN_TASKS = 8


def rows_split_ok(shape, nb):
    """Whether the batch axes times the column blocks of an output of
    `shape` are enough parallel tasks to leave the row loop serial."""
    return math.prod(shape[:-2]) * (shape[-1] // nb) >= MIN_COLUMN_TASKS


def rows_serial(shape, mb, nb, padded):
    """Whether tile_gemm leaves the row blocks a serial loop inside the
    parallel one (which is then one column panel per iteration)."""
    return rows_split_ok(shape, nb) or (shape[-2] % mb != 0 and not padded)


def pack_gemm_operand(e, c, b_read, nb, kind):
    """Insert the packing stage Bp before `c` and make `c` read it; returns
    the packing te.compute.  kind "nk": B[.., j, k]; "kn": B[.., k, j].
    Where c's columns run past B's (pad_gemm), the last panel is
    zero-filled beyond them."""
    bt = b_read.tensor
    shape = bt.type.shape
    et = bt.type.element_type
    lead = len(shape) - 2
    n, k = (shape[-2], shape[-1]) if kind == "nk" else (shape[-1], shape[-2])
    padded = c.tensor_type.shape[-1]   # more than n for a pad_gemm: the last panel zero-filled

    def body(e, *idx):
        *ld, jo, kk, ji = idx
        j = e.add(e.mul(jo, nb), ji)
        inside = e.cmp("lt", j, n) if padded > n else True
        return e.read(bt, list(ld) + ([j, kk] if kind == "nk" else [kk, j]), inside)
    names = [f"b{d}" for d in range(lead)] + ["jo", "k", "ji"]
    saved = e.block
    packed = compute(e, T.TensorType(tuple(shape[:-2]) + (-(-padded // nb), k, nb), et), body, names=names,
                     name=f"{bt.name or 'weight'}_packed")
    e.at(saved)
    pop = packed.defining_op()
    pop.detach()
    c.parent.insert_before(c, pop)
    # c reads Bp[.., j / nb, k, j % nb]: emit at the end of c's body, then
    # move the new ops in front of the read they replace
    before = set(c.body.ops)
    r = Emitter(c.body, c.loc)
    *ld, x, y = list(b_read.indices)
    j, kk = (x, y) if kind == "nk" else (y, x)
    new = r.read(packed, ld + [r.floordiv(j, nb), kk, r.floormod(j, nb)])
    for op in [op for op in c.body.ops if op not in before]:
        op.detach()
        c.body.insert_before(b_read, op)
    b_read.results[0].replace_all_uses_with(new)
    b_read.erase()
    return pop


def tile_gemm(s, st, mb, nb, padded=False, pack=None):
    """Tile a stage shaped like the GEMM output: rows by mb (unrolled),
    columns by nb (vectorized), column blocks outermost (a block of B then
    stays in cache while every row block reads it), the reduce axes (for a
    GEMM accumulating in memory) inside the row blocks.  The batch axes and
    column blocks are fused into one parallel loop; the row blocks join it
    when the columns alone are too little parallel work and mb divides the
    rows, else they stay a serial loop inside, which
    tir-loop-partition splits when mb does not divide.  Returns the loop
    the tile is computed at (the row-block loop, or the fused one).

    `pack`, the stage that packs B per call (pack_gemm_operand), is
    computed at the parallel loop when each of its iterations is one
    column panel: each thread packs the panel it is about to use, into a
    buffer that stays in its cache, instead of a pass that writes all of
    Bp to memory before any tile reads it (1024^3 matmul, 2 threads: about
    5% faster).  When the row blocks are in the parallel loop too, a
    panel would be packed once per row block: the caller packs it at the
    root."""
    from .schedules import BLOCK_CANDIDATES, VECTOR_CANDIDATES, knob
    axes = st.axes(s)
    rank = st.rank
    sp, red = axes[:rank], axes[rank:]
    shape = st.shape
    jo, ji = s.split(sp[-1], factor=knob(st.value, "cols", nb, VECTOR_CANDIDATES, shape[-1]))
    io, ii = s.split(sp[-2], factor=knob(st.value, "rows", mb, BLOCK_CANDIDATES, shape[-2]))
    s.reorder(*sp[:-2], jo, io, *red, ii, ji)
    serial_rows = rows_serial(shape, mb, nb, padded)
    outer = [*sp[:-2], jo] + ([] if serial_rows else [io])
    f = s.fuse(*outer) if len(outer) > 1 else outer[0]
    s.parallel(f)
    s.unroll(ii)
    s.vectorize(ji)
    if pack is not None and serial_rows:
        s.compute_at(pack.results[0], f)
        s.vectorize(s.axes(pack.results[0])[-1])
    return io if serial_rows else f


def flatten_rows(e, c, deps, vu):
    """A GEMM whose rows are several output axes (a 1x1 conv in NHWC: rows
    (n, h, w), columns o, k the input channels; reduce axes of extent 1
    aside) whose last row axis is short (below MAX_FLAT_WIDTH) and makes a
    register tile of fewer elements than the flattened rows do (tile rows
    of w: 7 x 8 at w = 7 or 14, against 6 x 16 over h*w; 14 rows of 4-lane
    vectors at 116 channels, against 8 x 32; elements, not registers: the
    14 x 4 tile holds 14 registers to the GEMM tile's 16, and ran at 38
    GFLOP/s to its 139): rewrite c as the GEMM over the rows flattened, ::

        G[b.., i, j] = sum_k c's body at (h, w) = unravel(i)
        C[b.., h, w, j] = G[b.., h * W + w, j]

    C (now a copy, inlined into any epilogue) replaces c; returns (G's
    te.compute, C's value), or None when c is not such a GEMM.  The cost
    is one pass over the output, which is small where this applies (a few
    hundred kilobytes at 14 x 14 and 7 x 7)."""
    from .schedules import tile_shape
    from .topi_nn import unravel_flat
    if c.reducer != "sum" or c.rank < 3 or not isinstance(c.tensor_type.element_type, T.FloatType):
        return None
    rank, shape = c.rank, c.tensor_type.shape
    big = [i for i, x in enumerate(c.reduce_extents) if x != 1]
    if len(big) != 1 or shape[-2] >= MAX_FLAT_WIDTH:
        return None
    roles = next(operand_roles(c, deps, rank + big[0]), None)
    if roles is None:
        return None
    _, b_read, ua, ub = roles
    rows = []
    for d in range(rank - 2, -1, -1):
        if d not in ua or d in ub:
            break
        rows.insert(0, d)
    if len(rows) < 2:
        return None
    vf, bf = tile_shape(shape[-1], shape[-2], vu, ragged=False)
    # a packed weight's columns tile as its whole panels (pad_packed_columns)
    width = packed_width(list(b_read.indices), c.body.args[rank - 1], c.body.args[rank + big[0]])
    n = shape[-1] if width is None else -(-shape[-1] // width) * width
    full = gemm_tile((math.prod(shape[d] for d in rows), n), vu, width and (width,))
    if full is None or (bf is not None and bf * vf >= full[0] * full[1]):
        return None
    r0 = rows[0]
    row_shape = [shape[d] for d in rows]
    gshape = tuple(shape[:r0]) + (math.prod(row_shape), shape[-1])
    name = c.results[0].name or "gemm"
    red = [(a.name or f"r{i}", x) for i, (a, x) in enumerate(zip(c.body.args[rank:], c.reduce_extents))]

    def gbody(e, *idx):
        coords = [e.val(v) for v in unravel_flat(e, idx[r0], row_shape)]
        zero = e.const(0)
        spatial = list(idx[:r0]) + coords + [idx[r0 + 1]]
        reduce = [idx[r0 + 2] if i == big[0] else zero for i in range(len(red))]
        return _clone_body(e, c, spatial + reduce)
    saved = e.block
    g = compute(e, T.TensorType(gshape, c.tensor_type.element_type), gbody,
                reduce=[red[big[0]]], reducer="sum",
                names=[f"b{d}" for d in range(r0)] + ["i", "j"], name=f"{name}_rows")

    def cbody(e, *idx):
        flat = idx[rows[0]]
        for d in rows[1:]:
            flat = e.add(e.mul(flat, shape[d]), idx[d])
        return e.read(g, list(idx[:r0]) + [e.val(flat), idx[-1]])
    copy = compute(e, c.tensor_type, cbody, names=[a.name for a in c.body.args[:rank]], name=name)
    e.at(saved)
    return _replace_by_copy(c, g, copy), copy


def pad_gemm(e, c, deps, vu):
    """A GEMM that gemm_plan finds no register tile for, because its
    columns are ragged (n not a multiple of a vector: the 197 x 197 scores
    of a ViT's attention, 4 GFLOP/s as a plain reduction): rewrite c as the
    GEMM over rows and columns padded to whole tiles, and a copy back::

        G[b.., i, j] = sum_k A[b.., min(i, m - 1), k] * Bp[b.., j / NB, k, j % NB]
        C[b.., i, j] = G[b.., i, j]                        (i < m, j < n)

    where Bp packs B in panels of NB columns, the last one zero-filled
    (pack_gemm_operand), and A's row index is clamped, so that the padded rows
    read real memory (their results are never copied out).  Every tile of
    G is then whole; only the copy-out is guarded.  (MB, NB) is the tile
    with the most accumulators per useful element computed.  C replaces c
    (inlined into any epilogue); returns (G's te.compute, C's value,
    G's plan as gemm_plan gives it), or None when c is no such GEMM (fewer
    than MIN_PACK_ROWS rows or a vector of columns: the reductions'
    schedules do better there)."""
    if c.reducer != "sum" or len(c.reduce_extents) != 1 or c.rank < 2:
        return None
    if not isinstance(c.tensor_type.element_type, T.FloatType) and not word_products(c):
        return None
    rank, shape = c.rank, c.tensor_type.shape
    m, n = shape[-2], shape[-1]
    if m < MIN_PACK_ROWS or n < vu.lanes:
        return None
    ia, ja, ka = rank - 2, rank - 1, rank
    args = list(c.body.args)
    for ra, rb, ua, ub in operand_roles(c, deps, ka):
        idx = list(rb.indices)
        if ia not in ua or ia in ub or len(idx) < 2 or any(deps(v) & {ja, ka} for v in idx[:-2]):
            continue
        if idx[-1] is args[ka] and idx[-2] is args[ja]:
            kind = "nk"
        elif idx[-1] is args[ja] and idx[-2] is args[ka]:
            kind = "kn"
        else:
            continue
        best, score = None, 0.0
        for nb in (2 * vu.lanes, vu.lanes):
            per_row = nb // vu.lanes
            mb = next(iter(tile_rows(per_row, vu)), None)
            if mb is None:
                continue
            mp, np_ = -(-m // mb) * mb, -(-n // nb) * nb
            useful = mb * per_row * (m * n) / (mp * np_)
            if useful > score:
                best, score = (mb, nb, mp, np_), useful
        if best is None:
            return None
        mb, nb, mp, np_ = best
        return _pad(e, c, ra, mb, nb, mp, np_, kind)
    return None


# A packed weight whose last panel runs past the columns (a 1x1 conv's 58
# or 116 output channels in panels of 32) guards the columns of every
# tile wherever the panel loop is fused with other axes (an NHWC conv's
# n and h), where tir-loop-partition cannot split the last panel off:
# ShuffleNet's 28x28 1x1 convs ran at 9-13 GFLOP/s, against 165 at 64
# channels.  With at most this many panels the GEMM runs over whole
# panels and its columns are copied out (pad_packed_columns); with more
# (an LM head's 1571) the guarded panel is a small share, less than a
# copy of the output would cost.
MAX_PADDED_PANELS = 64


def pad_packed_columns(e, c, plan):
    """gemm_plan's `plan` for c, a GEMM reading a weight packed in panels
    (nn.contrib_dense_pack) whose columns end inside the last panel, at
    most MAX_PADDED_PANELS of them: rewrite c as pad_gemm does, over the
    columns rounded up to whole panels (the panel's zero padding read, no
    row padding), and a copy back; returns (G, C, G's plan) as pad_gemm,
    else None."""
    a_read, _, kind, mb, nb = plan
    shape = c.tensor_type.shape
    n = shape[-1]
    panels = -(-n // nb)
    if kind is not None or n % nb == 0 or panels > MAX_PADDED_PANELS:
        return None
    return _pad(e, c, a_read, mb, nb, shape[-2], panels * nb, None)


def _pad(e, c, a_read, mb, nb, mp, np_, kind):
    """pad_gemm's rewrite of `c` into G over (mp, np_) and its copy C."""
    rank, shape = c.rank, c.tensor_type.shape
    m = shape[-2]
    name = c.results[0].name or "gemm"
    reads = [op for op in c.body.ops if isinstance(op, ReadOp)]
    a_at = reads.index(a_read)

    def gbody(e, *idx):
        idx = list(idx)
        if mp > m:   # only A reads the row index (operand_roles)
            idx[rank - 2] = e.binary("min", e.val(idx[rank - 2]), e.const(m - 1))
        return _clone_body(e, c, idx)
    saved = e.block
    g = compute(e, T.TensorType(tuple(shape[:-2]) + (mp, np_), c.tensor_type.element_type), gbody,
                reduce=[(c.body.args[rank].name or "k", c.reduce_extents[0])], reducer="sum",
                names=[f"b{d}" for d in range(rank - 2)] + ["i", "j"], name=f"{name}_padded")
    copy = compute(e, c.tensor_type, lambda e, *idx: e.read(g, list(idx)),
                   names=[a.name for a in c.body.args[:rank]], name=name)
    e.at(saved)
    gop = _replace_by_copy(c, g, copy)
    g_reads = [op for op in gop.body.ops if isinstance(op, ReadOp)]
    return gop, copy, (g_reads[a_at], g_reads[1 - a_at], kind, mb, nb)


def _replace_by_copy(c, g, copy):
    """Move the GEMM stage `g` and its copy-out `copy` (built at the end of
    the block) before `c`, which `copy` replaces; returns g's te.compute."""
    gop = g.defining_op()
    for op in (gop, copy.defining_op()):
        op.detach()
        c.parent.insert_before(c, op)
    c.results[0].replace_all_uses_with(copy)
    c.erase()
    return gop


def _clone_body(e, c, args):
    """Emit a copy of c's body at e with its arguments bound to `args`;
    returns the value it yields."""
    from ...dialects.te.ops import YieldOp
    mapping = dict(zip(c.body.args, args))
    for op in c.body.ops:
        if isinstance(op, YieldOp):
            return mapping.get(op.operands[0], op.operands[0])
        e.block.append(op.clone(mapping))   # (clone extends mapping with the results)
    raise ValueError("te.compute body without a yield")
