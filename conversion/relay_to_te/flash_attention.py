"""nn.attention on the CPU as one hand-written TIR kernel: FlashAttention's
online softmax, which a TE reduction cannot express (its state is a
running maximum, a sum and a row of Dv accumulators, updated together).
topi_attention.py makes it a ``te.extern`` of the tir.func built here.

Blocks of G x R queries (G = 8 groups of R = 4 rows; register_tile), the
blocks of every batch and head one parallel loop; fewer than R queries
(decoding) take blocks of one row instead, a variant under a run-time
branch (4 rows computing one query each: 13-17% slower at 1 x 2048 and
1 x 8192, where reading K and V is most of the time).  Per block:

    m[r] = -inf;  l[r] = 0 (W lanes);  O[r, :] = 0          for its rows r
    for each tile of T keys (64 on AVX-512) its last row can see:
      for each group of R rows that sees some key of the tile (causal: the
      tiles past a group's diagonal are skipped, as are groups past M;
      with a bias, the tiles it hides from every row of the group once
      each has seen a key: _shown):
        S = Q[rows] · Kᵀ[:, tile]                 R x T, vector registers
            (the key's "BNHS" layout: per d a row of Kᵀ, T / W vector loads)
        S = S * scale + bias; where the diagonal or the sequence's end cuts
            the tile, -inf for the keys a row cannot see
        mt[r] = max_j S[r, j]   (lane-wise, then log2 W folds of the lanes)
        m' = max(m, mt); α = exp(m - m')          one vector over the R rows
        P = exp(S - m');  l = l·α + P (lane-wise);  O = O·α + P · V[tile]
        m = m'
    out[rows] = O / sum(l)

The group loop inside the tile loop keeps a tile of K and V in L1 for
the block's 32 rows.  No buffer grows with the sequence: per thread R x T
scores and G·R x Dv sums.  A row whose keys are all hidden keeps m = -inf
(its exponent's base is then 0, so nothing is NaN on the way) and ends
0 / 0 = NaN, as the softmax it replaces.  Tiles every row of the group
sees in whole run without masks or guards; the ones the causal diagonal
cuts compare each key's offset (iota) with the row's limit, one vector
compare; only the tile past the last key clamps its key index, lane by
lane.  Arithmetic is f32 (f64 for f64 operands);
f16 and bf16 operands are widened as they are read.
"""

from __future__ import annotations

from contextlib import contextmanager

from ...dialects.relay.ops.attention import MASK_FILL, bias_index, from_bhsd
from ...dialects.te.builder import Emitter
from ...dialects.tir.ops import ForOp, FuncOp, IfOp
from ...ir import types as T
from ...ir.core import Block, Region, Value

NEG_INF = float("-inf")


# keys per tile at most: four AVX-512 vectors
MAX_TILE_KEYS = 64


def register_tile(width, accumulators):
    """(R, T): queries per group and keys per tile, an R x T tile of
    scores in the vector registers: R = 4, T = W x min(accumulators // R,
    MAX_TILE_KEYS / W) (AVX-512: 4 x 64 in 16 registers; AVX2: 4 x 24 in
    12).  On AVX-512 at 512-1024 tokens, 4 x 64 ran 7-13% faster than
    8 x 32 (fewer row maxima and rescalings per score), 6 x 48 as fast,
    2 x 128 25% slower."""
    rows = 4
    return rows, width * max(1, min(accumulators // rows, MAX_TILE_KEYS // width))


def column_lanes(dv, width):
    """Lanes of the vectors along head_dim: the widest of W, 8, 4, 2, 1
    that divides Dv (no column past Dv is ever read)."""
    return next(w for w in (width, 8, 4, 2, 1) if w <= width and dv % w == 0)


class _Kernel:
    """Loops and buffers over an Emitter positioned in the tir.func body."""

    def __init__(self, body, ct):
        self.e = Emitter(body, const_block=body)
        self.ct = ct   # the type the kernel computes in

    @contextmanager
    def loop(self, lo, hi, kind="serial", name="i"):
        e = self.e
        loop = ForOp.create(lo, hi, kind=kind, name=name)   # each bound an int or an index Value
        e.block.append(loop)
        outer = e.block
        e.at(loop.body)
        try:
            yield loop.induction_var
        finally:
            e.at(outer)

    @contextmanager
    def branch(self, cond):
        """``with K.branch(c) as orelse:`` emits its body under ``tir.if c``;
        inside, ``with orelse(c2):`` emits into the else region, under c2
        (True for a plain else; c2 emitted before the branch, which it must
        dominate).  A condition known at build time emits its branch alone
        (the other into a block that is dropped)."""
        e = self.e
        outer = e.block
        if cond is True or cond is False:
            taken, other = (outer, Block()) if cond is True else (Block(), outer)
            iff = None
        else:
            iff = IfOp([cond], [], {}, [Region([Block()]), Region([Block()])])
            outer.append(iff)
            taken, other = iff.then_block, iff.else_block

        @contextmanager
        def orelse(c2=True):
            back = e.block
            e.at(other)
            try:
                with self.branch(c2) as nested:
                    yield nested
            finally:
                e.at(back)
        e.at(taken)
        try:
            yield orelse
        finally:
            e.at(outer)
            if iff is not None and not iff.else_block.ops:
                iff.regions.pop()

    def alloc(self, shape, name):
        return self.e.op("tir.alloc", [], [T.MemRefType(tuple(shape), self.ct, "local")], name=name)

    def load(self, buf, idx):
        return self.e.op("tir.load", [buf] + [self.e.val(i) for i in idx], [buf.type.element_type])

    def read(self, buf, idx):
        """An element of an operand in the compute type (f16, bf16 widened)."""
        return self.e.cast(self.load(buf, idx), self.ct)

    def store(self, v, buf, idx):
        self.e.op("tir.store", [v, buf] + [self.e.val(i) for i in idx], [])

    def f(self, x):
        return self.e.const(x, self.ct)

    def exp(self, x):
        return self.e.op("tir.intrin", [x], [x.type], {"intrin": "exp"})


def flash_kernel(name, dims, types, layout, klayout, bias_shape, scale, causal, rows, width, tile, groups=8,
                 empty_rows="nan", kv_group=1):
    """The tir.func @name(q, k, v, [bias], sizes..., out).

    dims: B, H, M, N, D (ints, or the index Values the caller passes for
    '?'), Dv (an int); types: the memref types of q, k, v, the bias and
    out; bias_shape: its dims (broadcast from the right to B, H, M, N), a
    float for a splat bias, or None; empty_rows: nn.attention's (a row
    that sees no key is NaN, or 0); kv_group: query heads per key / value
    head (grouped-query attention: head h reads k and v of h // kv_group,
    no copy of them).  Returns (the tir.func, the size
    Values in the order of its index parameters: the output's '?' sizes
    first, as te.extern sizes its result)."""
    B, H, M, N, D, Dv = dims
    out_sizes = [d for d in from_bhsd(layout, B, H, M, Dv) if isinstance(d, Value)]
    bias_tensor = isinstance(bias_shape, tuple)
    named = list(zip((B, H, M, N, D), ("batch", "heads", "queries", "keys", "head_dim")))
    named += [(d, f"bias_d{a}") for a, d in enumerate(bias_shape if bias_tensor else ())]
    sizes = list(out_sizes)
    for d, _ in named:
        if isinstance(d, Value) and all(d is not s for s in sizes):
            sizes.append(d)
    size_names = [next(n for d, n in named if d is s) for s in sizes]
    bufs = ["q", "k", "v"] + (["bias"] if bias_tensor else [])
    arg_types = [types[n] for n in bufs] + [T.index] * len(sizes) + [types["out"]]
    body = Block(arg_types, bufs + size_names + ["out"])
    args = dict(zip(bufs + ["out"], list(body.args[:len(bufs)]) + [body.args[-1]]))
    size_arg = {id(v): a for v, a in zip(sizes, body.args[len(bufs):-1])}

    def dim(d):
        return size_arg[id(d)] if isinstance(d, Value) else d
    B, H, M, N, D = (dim(d) for d in (B, H, M, N, D))
    bshape = tuple(dim(d) for d in bias_shape) if bias_tensor else None
    et = types["out"].element_type
    K = _Kernel(body, T.f64 if et is T.f64 else T.f32)
    e = K.e
    R, W, TK = rows, width, tile
    WC = column_lanes(Dv, W)
    group = 2 if (Dv // WC) % 2 == 0 else 1   # column vectors summed together across a tile's keys
    q, k, v, out = args["q"], args["k"], args["v"], args["out"]

    def at(buf, lay, b, h, s, d):
        return K.read(buf, list(from_bhsd(lay, b, h, s, d)))

    def limit(i):
        """The first key row i cannot see (causal), or N."""
        if causal == "none":
            return N
        last = i if causal == "top_left" else e.add(i, e.sub(N, M))
        return e.index("max", 0, e.index("min", N, e.add(last, 1)))

    def blocks(R, groups):
        """The parallel loop over blocks of `groups` x R queries."""
        RB = R * groups
        nblocks = e.floordiv(e.add(M, RB - 1), RB)
        with K.loop(0, e.mul(e.mul(B, H), nblocks), "parallel", "bhq") as bhq:
            blk = e.floormod(bhq, nblocks)
            bh = e.floordiv(bhq, nblocks)
            b, h = e.floordiv(bh, H), e.floormod(bh, H)
            hkv = e.floordiv(h, kv_group)
            base = e.mul(blk, RB)
            S = K.alloc((R, TK), "S")
            O = K.alloc((RB, Dv), "O")
            mrow = K.alloc((RB,), "m")
            lsum = K.alloc((RB, W), "l")
            tmax = [K.alloc((W,), "tmax"), K.alloc((W,), "tmax2")]
            rmax = K.alloc((R,), "rmax")   # a tile's row maxima, then each row's exponent base
            alpha = K.alloc((R,), "alpha")
            flag = K.alloc((1,), "shown")
            iota = e.op("tir.alloc", [], [T.MemRefType((TK,), T.i32, "local")], name="iota")   # 0, 1, .. TK - 1
            with K.loop(0, TK, "serial", "j") as j:
                K.store(e.cast(j, T.i32), iota, [j])
            with K.loop(0, RB, "serial", "r") as r:
                K.store(K.f(NEG_INF), mrow, [r])
                with K.loop(0, W, "vectorized", "c") as c:
                    K.store(K.f(0.0), lsum, [r, c])
                with K.loop(0, Dv // WC, "unrolled", "cu") as cu, K.loop(0, WC, "vectorized", "c") as c:
                    K.store(K.f(0.0), O, [r, e.add(e.mul(cu, WC), c)])

            def tile(j0, g, kind):
                """One tile of keys from j0 for the block's group g of R rows:
                scores, online softmax, P · V.  kind: "whole" (every row sees
                every key), "masked" (a causal diagonal cuts it: each key's
                offset in the tile, from iota, compared with the row's limit,
                one vector compare) or "tail" (it passes the last key: the key
                index clamped too, lane by lane)."""
                guarded = kind == "tail"
                i0 = e.add(base, e.mul(g, R))
                row = [e.index("min", e.add(i0, r), e.sub(M, 1)) for r in range(R)]   # past M: the last row again
                state = [e.add(e.mul(g, R), r) for r in range(R)]
                # (a vectorized loop touches one row of S: tir-vectorize keeps
                # apart the accesses of one buffer only at one index; LLVM
                # shares the rows' equal loads of Kᵀ)
                for r in range(R):   # S = 0
                    with K.loop(0, TK, "vectorized", "j") as j:
                        K.store(K.f(0.0), S, [r, j])
                with K.loop(0, D, "serial", "d") as d:
                    for r in range(R):
                        qs = at(q, layout, b, h, row[r], d)   # (a load LLVM broadcasts: the scale comes after)
                        with K.loop(0, TK // W, "unrolled", "ju") as ju, K.loop(0, W, "vectorized", "jv") as jv:
                            jj = e.add(e.mul(ju, W), jv)
                            key = e.add(j0, jj)
                            if guarded:
                                key = e.select(e.cmp("lt", key, N), key, e.const(0))
                            kv = at(k, klayout, b, hkv, key, d)
                            K.store(e.binary("add", K.load(S, [r, jj]), e.binary("mul", qs, kv)), S, [r, jj])
                for r in range(R):
                    with K.loop(0, TK // W, "unrolled", "ju") as ju, K.loop(0, W, "vectorized", "jv") as jv:
                        jj = e.add(e.mul(ju, W), jv)
                        key = e.add(j0, jj)
                        s = e.binary("mul", K.load(S, [r, jj]), K.f(scale))
                        if bshape is not None:
                            bkey = e.select(e.cmp("lt", key, N), key, e.const(0)) if guarded else key
                            s = e.binary("add", s, K.read(args["bias"], bias_index(bshape, (b, h, row[r], bkey))))
                        elif bias_shape is not None:
                            s = e.binary("add", s, K.f(bias_shape))
                        if kind != "whole":
                            seen = e.cast(e.sub(limit(row[r]), j0), T.i32)   # keys of the tile row r sees
                            s = e.select(e.cmp("lt", K.load(iota, [jj]), seen), s, K.f(NEG_INF))
                        K.store(s, S, [r, jj])
                    _row_max(K, S, tmax, r, TK, W)
                    K.store(K.load(tmax[0], [0]), rmax, [r])
                _online_softmax(K, S, O, mrow, lsum, rmax, alpha, e.mul(g, R), R, TK, W, WC, Dv)
                _weighted_values(K, S, O, v, layout, b, hkv, j0, N if guarded else None, state, TK, WC, group, Dv)

            def unless_hidden(j0, g, kind):
                """The tile, unless a bias with a keys axis hides it from
                the whole group (_shown)."""
                if bshape is None or bshape[-1] == 1:
                    return tile(j0, g, kind)
                i0 = e.add(base, e.mul(g, R))
                rows = [e.index("min", e.add(i0, r), e.sub(M, 1)) for r in range(R)]
                shown = _shown(K, args["bias"], bshape, b, h, rows, j0, mrow,
                               [e.add(e.mul(g, R), r) for r in range(R)], tmax, flag, TK, W)
                with K.branch(shown):
                    tile(j0, g, kind)

            last = e.index("min", e.add(base, RB - 1), e.sub(M, 1))
            with K.loop(0, e.floordiv(e.add(limit(last), TK - 1), TK), "serial", "jt") as jt:   # tiles a row sees
                j0 = e.mul(jt, TK)
                with K.loop(0, groups, "serial", "g") as g:
                    i0 = e.add(base, e.mul(g, R))
                    first = limit(e.index("min", i0, e.sub(M, 1)))
                    seen = limit(e.index("min", e.add(i0, R - 1), e.sub(M, 1)))
                    # whole: every row of the group sees every key of the tile;
                    # else some row sees one of them; else (past the causal
                    # diagonal, or a group past M) nothing to do
                    live = e.cmp("lt", i0, M)
                    whole = e.and_(live, e.cmp("le", e.add(j0, TK), first))
                    some = e.and_(live, e.cmp("lt", j0, seen))
                    inside = e.and_(some, e.cmp("le", e.add(j0, TK), N))
                    with K.branch(whole) as orelse:
                        unless_hidden(j0, g, "whole")
                        with orelse(inside) as tail:
                            unless_hidden(j0, g, "masked")
                            with tail(some):
                                tile(j0, g, "tail")
            with K.loop(0, RB, "serial", "r") as r:
                K.store(K.f(0.0), tmax[0], [0])
                with K.loop(0, W, "unrolled", "c") as c:
                    K.store(e.binary("add", K.load(tmax[0], [0]), K.load(lsum, [r, c])), tmax[0], [0])
                total = K.load(tmax[0], [0])
                inv = e.binary("div", K.f(1.0), total)
                if empty_rows == "zero":   # a row that saw no key (O = 0, l = 0): 0, not 0 / 0
                    inv = e.select(e.cmp("eq", total, K.f(0.0)), K.f(0.0), inv)
                i = e.add(base, r)
                with K.branch(e.cmp("lt", i, M)):
                    _store_row(K, O, out, layout, b, h, i, r, inv, WC, Dv)

    # a query or three (decoding): rows of one, not 4 rows computing the same query
    small = e.cmp("lt", M, R) if R > 1 else False
    with K.branch(small) as orelse:
        blocks(1, 1)
        with orelse():
            blocks(R, groups)
    f = FuncOp((), (), {"sym_name": name, "num_outputs": 1}, [Region([body])])
    return f, sizes


def _row_max(K, S, tmax, r, TK, W):
    """tmax[0][0] = the maximum of row r of S: the lane-wise maxima of its
    vectors, then halves of the lanes folded onto the others."""
    e = K.e
    with K.loop(0, W, "vectorized", "c") as c:
        K.store(K.load(S, [r, c]), tmax[0], [c])
    for u in range(1, TK // W):
        with K.loop(0, W, "vectorized", "c") as c:
            K.store(_max(e, K.load(tmax[0], [c]), K.load(S, [r, e.add(c, u * W)])), tmax[0], [c])
    _fold_max(K, tmax, W)


def _shown(K, bias, bshape, b, h, rows, j0, mrow, state, tmax, flag, TK, W):
    """Whether the tile may weigh for some row of the group: false when the
    bias hides its keys from every row, so that skipping it changes
    nothing: every bias value in it at or below MASK_FILL, and every row's
    running maximum already above MASK_FILL / 10 (the weights then
    underflow to exactly 0, and the sums are rescaled by exp(0) = 1).  A
    causal or padding mask given as a tensor (GPT's additive mask, a
    where-mask made a bias) then skips what the op's own causal_mask
    would; a row that has seen only hidden keys so far computes the tile
    (its weights may be what the softmax of hidden scores gives).  The
    group's first row is read first, the rest only when it is hidden (a
    bias that hides nothing costs T / W vector loads and maxima a tile); a
    bias whose rows broadcast reads one row."""
    e = K.e
    if len(bshape) < 2 or bshape[-2] == 1:
        rows = rows[:1]
    low = None
    for sr in state:
        m = K.load(mrow, [sr])
        low = m if low is None else e.select(e.cmp("lt", m, low), m, low)
    K.store(K.f(1.0), flag, [0])
    first = _bias_max(K, bias, bshape, b, h, rows[:1], j0, tmax, TK, W)
    with K.branch(e.and_(e.cmp("le", first, K.f(MASK_FILL)), e.cmp("gt", low, K.f(MASK_FILL / 10)))):
        if len(rows) > 1:
            rest = _bias_max(K, bias, bshape, b, h, rows[1:], j0, tmax, TK, W)
            K.store(e.select(e.cmp("le", rest, K.f(MASK_FILL)), K.f(0.0), K.f(1.0)), flag, [0])
        else:
            K.store(K.f(0.0), flag, [0])
    return e.cmp("ne", K.load(flag, [0]), K.f(0.0))


def _bias_max(K, bias, bshape, b, h, rows, j0, tmax, TK, W):
    """The largest bias value of the tile's keys for `rows`; NaN if one is
    (a NaN bias is no mask)."""
    e = K.e
    for n, row in enumerate(rows):
        for u in range(TK // W):
            with K.loop(0, W, "vectorized", "c") as c:
                x = K.read(bias, bias_index(bshape, (b, h, row, e.add(j0, e.add(c, u * W)))))
                K.store(x if n == u == 0 else e.binary("max", K.load(tmax[0], [c]), x), tmax[0], [c])
    _fold_max(K, tmax, W, lambda a, b: e.binary("max", a, b))
    return K.load(tmax[0], [0])


def _fold_max(K, tmax, W, mx=None):
    """tmax[0][0] = the maximum of the W lanes of tmax[0]: halves of the
    lanes folded onto the others (log2 W vector steps, not W - 1 scalar
    ones), between the two buffers of tmax (tir-vectorize keeps a buffer's
    loads and stores at one index).  mx: the maximum of two (_max)."""
    e = K.e
    mx = mx or (lambda a, b: _max(e, a, b))
    half, src = W // 2, 0
    while half >= 1:
        with K.loop(0, half, "vectorized", "c") as c:
            K.store(mx(K.load(tmax[src], [c]), K.load(tmax[src], [e.add(c, half)])), tmax[1 - src], [c])
        half, src = half // 2, 1 - src
    if src != 0:
        K.store(K.load(tmax[src], [0]), tmax[0], [0])


def _online_softmax(K, S, O, mrow, lsum, rmax, alpha, s0, R, TK, W, WC, Dv):
    """The rows s0 .. s0 + R - 1 of the block's state, given their tile of
    scores S and its row maxima rmax: the running maxima m, then (per row)
    the scores made weights exp(S - m'), l and O rescaled by exp(m - m').
    The maxima and the rescaling factors are one vector over the rows."""
    e = K.e
    with K.loop(0, R, "vectorized", "r") as r:
        sr = e.add(s0, r)
        old = K.load(mrow, [sr])
        new = _max(e, old, K.load(rmax, [r]))
        K.store(new, mrow, [sr])
        # every score so far hidden: exponents from 0 (the weights are exp(-inf) = 0, not NaN)
        base = e.select(e.cmp("eq", new, K.f(NEG_INF)), K.f(0.0), new)
        K.store(base, rmax, [r])
        K.store(K.exp(e.binary("sub", old, base)), alpha, [r])
    for r in range(R):
        sr = e.add(s0, r)
        base, a = K.load(rmax, [r]), K.load(alpha, [r])
        with K.loop(0, W, "vectorized", "c") as c:
            K.store(e.binary("mul", K.load(lsum, [sr, c]), a), lsum, [sr, c])
        with K.loop(0, TK // W, "unrolled", "ju") as ju, K.loop(0, W, "vectorized", "jv") as jv:
            jj = e.add(e.mul(ju, W), jv)
            p = K.exp(e.binary("sub", K.load(S, [r, jj]), base))
            K.store(p, S, [r, jj])
            K.store(e.binary("add", K.load(lsum, [sr, jv]), p), lsum, [sr, jv])
        with K.loop(0, Dv // WC, "unrolled", "cu") as cu, K.loop(0, WC, "vectorized", "c") as c:
            col = e.add(e.mul(cu, WC), c)
            K.store(e.binary("mul", K.load(O, [sr, col]), a), O, [sr, col])


def _max(e, a, b):
    """max(a, b) as x86's maxps computes it (a compare and a select, one
    instruction): arith.maximumf's NaN and signed-zero rules cost a
    blend and a compare more per vector.  A NaN score still makes the row
    NaN, through its weight."""
    return e.select(e.cmp("gt", a, b), a, b)


def _weighted_values(K, P, O, v, layout, b, h, j0, n, state, TK, WC, group, Dv):
    """O[r] += sum over the tile's keys of P[r, j] · V[j]: per group of
    column vectors, the keys innermost but for the rows, so R x group sums
    stay in registers across the tile.  With `n` (a tile that may pass the
    last key) the value's row index is clamped; its weight is 0 there."""
    e = K.e
    with K.loop(0, Dv // (WC * group), "serial", "cg") as cg, K.loop(0, TK, "serial", "j") as j:
        key = e.add(j0, j)
        if n is not None:
            key = e.index("min", key, e.sub(n, 1))
        for r, sr in enumerate(state):
            p = K.load(P, [r, j])
            with K.loop(0, group, "unrolled", "cu") as cu, K.loop(0, WC, "vectorized", "c") as c:
                col = e.add(e.mul(e.add(e.mul(cg, group), cu), WC), c)
                vv = K.read(v, list(from_bhsd(layout, b, h, key, col)))
                K.store(e.binary("add", K.load(O, [sr, col]), e.binary("mul", p, vv)), O, [sr, col])


def _store_row(K, O, out, layout, b, h, i, r, inv, WC, Dv):
    e = K.e
    with K.loop(0, Dv // WC, "unrolled", "cu") as cu, K.loop(0, WC, "vectorized", "c") as c:
        col = e.add(e.mul(cu, WC), c)
        K.store(e.cast(e.binary("mul", K.load(O, [r, col]), inv), out.type.element_type), out,
                list(from_bhsd(layout, b, h, i, col)))
