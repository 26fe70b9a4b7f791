"""Features of a config, for the XGBoost cost model.

Two kinds, both fixed-length for one task and comparable across tasks of
one template (same knob names, other shapes), so a model trained on one
shape can rank another's configs (transfer learning):

knob features (``knob_features``)
    one column per knob, knobs sorted by name: log2 of a positive integer
    value, the value itself for other integers, the candidate index for a
    string.  Vectorised over many indices (mixed-radix digits and a lookup
    table per knob): about a microsecond a config.

loop features (``itervar_features``, AutoTVM's "itervar" features)
    instantiate the config, run ``apply-schedule`` and walk the tir.for
    nests inside the te.func.  The nest described is the path (func down to
    an innermost loop holding te.read/te.write ops) with the most
    iterations, ties to the deeper and then the first.  For each of its
    first ``LEVELS`` loops, outermost first (zeros past its depth)::

        log2 extent, one-hot kind (serial, parallel, vectorized, unrolled,
        thread), log2(1 + bytes touched by the accesses inside the loop),
        how many of the innermost accesses step with stride 0 / 1 / other
        along this loop

    where an access touches, inside the loop at level l, the product of the
    extents of the loops at levels >= l its indices depend on, times its
    element size; a stride is the coefficient of the loop variable in the
    access's row-major flattened address (an affine walk over arith.addi /
    subi / muli; anything else counts as "other").  Then totals: loops in
    the nest and in the function, log2 of the vectorized, parallel and
    unrolled extents, log2 iterations, accesses, log2 bytes at the top, and
    a flag for a config that makes no valid schedule (all else zero).  The
    knob features follow, so the model sees both.

Cost: parsing and scheduling one config takes about 4-6 ms, so loop
features for the 128 x 500 points simulated annealing visits per plan
would take minutes.  Choice made: SA walks with a model on the knob
features (cheap, vectorised), and the loop-feature model re-ranks only SA's
best few hundred candidates and is trained on the measured configs
(see tuner/xgb.py).  Each config's loop features are computed once and
cached by (task workload, code hash, index); ``warm`` fills the cache for
a large batch in worker processes.
"""

from __future__ import annotations

import math

import numpy as np

LEVELS = 10
KINDS = ("serial", "parallel", "vectorized", "unrolled", "thread")
PER_LEVEL = 1 + len(KINDS) + 1 + 3
TOTALS = 9

_CACHE: dict = {}          # (workload, code_hash, index) -> loop feature vector
_TABLES: dict = {}         # (workload, code_hash) -> (radix, per-knob value tables, name order)


# ---- knob features -----------------------------------------------------------

def _knob_value(c, i) -> float:
    if isinstance(c, tuple) and len(c) > 1 and c[0] == -1 and all(type(x) is int and x > 0 for x in c[1:]):
        return math.log2(math.prod(c[1:]))   # a split's sizes (-1, f1, ...): its inner extent
    if isinstance(c, (str, tuple)):   # a name, a permutation, an annotation: its index
        return float(i)
    if isinstance(c, int) and c > 0:
        return math.log2(c)
    return float(c)


def _tables(task):
    key = (task.workload, task.code_hash)
    t = _TABLES.get(key)
    if t is None:
        knobs = task.config_space.knobs
        radix = np.cumprod([1] + [len(k) for k in knobs[:-1]]).astype(np.int64)
        lens = np.array([len(k) for k in knobs], dtype=np.int64)
        values = [np.array([_knob_value(c, i) for i, c in enumerate(k.candidates)]) for k in knobs]
        order = sorted(range(len(knobs)), key=lambda j: knobs[j].name)   # by name: stable across tasks
        t = _TABLES[key] = (radix, lens, values, order)
    return t


def digits(task, indices) -> np.ndarray:
    """(n, knobs) candidate index of each knob, in the space's knob order."""
    radix, lens, _, _ = _tables(task)
    idx = np.asarray(indices, dtype=np.int64)[:, None]
    return (idx // radix[None, :]) % lens[None, :]


def knob_features(task, indices) -> np.ndarray:
    """(n, knobs) float features, columns sorted by knob name."""
    _, _, values, order = _tables(task)
    d = digits(task, indices)
    if d.shape[0] == 0:
        return np.zeros((0, len(order)))
    return np.stack([values[j][d[:, j]] for j in order], axis=1)


def knob_names(task) -> list[str]:
    return sorted(k.name for k in task.config_space.knobs)


# ---- loop features -----------------------------------------------------------

def feature_length(task) -> int:
    return LEVELS * PER_LEVEL + TOTALS + len(task.config_space.knobs)


def itervar_features(task, indices) -> np.ndarray:
    """(n, feature_length(task)) loop features followed by knob features."""
    indices = list(indices)
    key0 = (task.workload, task.code_hash)
    rows = []
    for i in indices:
        k = key0 + (int(i),)
        f = _CACHE.get(k)
        if f is None:
            f = _CACHE[k] = _loop_vector(task, int(i))
        rows.append(f)
    loops = np.array(rows).reshape(len(indices), LEVELS * PER_LEVEL + TOTALS)
    return np.concatenate([loops, knob_features(task, indices)], axis=1)


def warm(task, indices, processes: int = 0) -> None:
    """Fill the loop-feature cache for `indices`, in a process pool when
    hundreds are missing (parsing is CPU-bound; starting a spawned worker
    costs about a second of imports, so a plan's 256 are done here)."""
    key0 = (task.workload, task.code_hash)
    missing = sorted({int(i) for i in indices} - {k[2] for k in _CACHE if k[:2] == key0})
    if len(missing) < 600 or processes == 1:   # below that, starting workers costs more
        itervar_features(task, missing)
        return
    import concurrent.futures as cf
    import multiprocessing as mp
    from .measure import cpu_count
    n = processes or cpu_count()
    chunks = [missing[j::n] for j in range(n)]
    with cf.ProcessPoolExecutor(n, mp_context=mp.get_context("spawn")) as pool:
        for chunk, rows in zip(chunks, pool.map(_rows, [task] * n, chunks)):
            for i, f in zip(chunk, rows):
                _CACHE[key0 + (i,)] = f


def _rows(task, indices):
    return [_loop_vector(task, i) for i in indices]


def _loop_vector(task, index: int) -> np.ndarray:
    out = np.zeros(LEVELS * PER_LEVEL + TOTALS)
    try:
        from ..ir.pass_manager import PassManager, instantiate, parse_pipeline
        from ..ir.registry import get_pass_class
        m = task.instantiate(index)
        PassManager(instantiate(parse_pipeline("apply-schedule"), get_pass_class)).run(m)
        func = next(op for op in m.body.ops if op.name == "te.func")
    except Exception:   # noqa: BLE001 - an invalid config is a feature, not an error
        out[-1] = 1.0
        return out
    _describe(func, out)
    return out


def _children(op):
    for r in op.regions:
        for b in r.blocks:
            yield from b.ops


def _nests(func):
    """(loops outer->inner, accesses directly inside the innermost) for each
    loop that holds accesses; and the number of loops in the function."""
    found, count = [], 0

    def visit(op, stack):
        nonlocal count
        acc = []
        for c in _children(op):
            if c.name == "tir.for":
                count += 1
                visit(c, stack + [c])
            elif c.name in ("te.read", "te.write"):
                acc.append(c)
            elif c.regions:   # an if or other region op: its loops and accesses nest on
                visit(c, stack)
        if acc and stack:
            found.append((stack, acc))

    visit(func, [])
    return found, count


def _extent(loop) -> int:
    e = loop.static_extent
    return max(int(e), 1) if e is not None else 1


def _affine(v, memo):
    """{induction var: coefficient or None (not affine)} of an index value."""
    r = memo.get(id(v))
    if r is not None:
        return r
    op = v.defining_op()
    if op is None:
        owner = getattr(v, "block", None)
        parent = owner.parent_op if owner is not None else None
        r = {v: 1} if parent is not None and parent.name == "tir.for" else {}
    elif op.name == "arith.constant":
        r = {}
    elif op.name in ("arith.addi", "arith.subi"):
        a, b = (_affine(x, memo) for x in op.operands)
        sign = -1 if op.name == "arith.subi" else 1
        r = dict(a)
        for k, c in b.items():
            if k in r:
                r[k] = None if r[k] is None or c is None else r[k] + sign * c
            else:
                r[k] = None if c is None else sign * c
    elif op.name == "arith.muli":
        x, y = op.operands
        cx, cy = _const(x), _const(y)
        if cx is not None or cy is not None:
            c, other = (cx, y) if cx is not None else (cy, x)
            r = {k: None if s is None else s * c for k, s in _affine(other, memo).items()}
        else:
            r = {k: None for x in op.operands for k in _affine(x, memo)}
    else:
        r = {k: None for x in op.operands for k in _affine(x, memo)}
    memo[id(v)] = r
    return r


def _const(v):
    op = v.defining_op()
    if op is not None and op.name == "arith.constant" and isinstance(op.attributes.get("value"), int):
        return op.attributes["value"]
    return None


def _access(op, memo):
    """(element bytes, {loop var: flattened-address coefficient or None})."""
    if op.name == "te.read":
        tensor, idx = op.tensor, list(op.indices)
    else:
        tensor, idx = op.operands[1], list(op.operands[2:])
    t = tensor.type
    shape = [d or 1 for d in getattr(t, "shape", ())] or [1]
    try:
        size = max(1, t.element_type.bitwidth // 8)
    except Exception:   # noqa: BLE001
        size = 4
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    coef = {}
    for d, v in enumerate(idx[:len(shape)]):
        for k, c in _affine(v, memo).items():
            prev = coef.get(k, 0)
            coef[k] = None if c is None or prev is None else prev + c * strides[d]
    return size, coef


def _describe(func, out):
    nests, n_loops = _nests(func)
    if not nests:
        return

    def iters(n):
        p = 1
        for lp in n[0]:
            p *= _extent(lp)
        return p
    loops, accs = max(nests, key=lambda n: (iters(n), len(n[0])))   # max keeps the first of ties
    memo = {}
    info = [_access(a, memo) for a in accs]
    ext = [_extent(lp) for lp in loops]
    ivs = [lp.induction_var for lp in loops]
    for lvl in range(min(len(loops), LEVELS)):
        base = lvl * PER_LEVEL
        out[base] = math.log2(ext[lvl])
        kind = loops[lvl].kind
        out[base + 1 + (KINDS.index(kind) if kind in KINDS else 0)] = 1.0
        touched = 0
        for size, coef in info:
            n = size
            for j in range(lvl, len(loops)):
                if ivs[j] in coef:
                    n *= ext[j]
            touched += n
        out[base + 1 + len(KINDS)] = math.log2(1 + touched)
        for size, coef in info:
            c = coef.get(ivs[lvl], 0)
            slot = 0 if c == 0 else 1 if c in (1, -1) else 2
            out[base + 2 + len(KINDS) + slot] += 1
    t = LEVELS * PER_LEVEL

    def prod_kind(kind):
        return math.log2(math.prod(e for e, lp in zip(ext, loops) if lp.kind == kind))
    top = sum(size * math.prod(e for e, iv in zip(ext, ivs) if iv in coef) for size, coef in info)
    out[t:t + 8] = [len(loops), n_loops, prod_kind("vectorized"), prod_kind("parallel"),
                    prod_kind("unrolled"), math.log2(math.prod(ext)), len(accs), math.log2(1 + top)]


def knob_features_of_values(task, values_list) -> np.ndarray:
    """Knob features (columns by knob name) of configs given as {knob:
    value} dicts, possibly of another task of the template: an integer is
    featurised by value, a string by its index among this task's
    candidates (-1 when absent), a missing knob as 0."""
    knobs = sorted(task.config_space.knobs, key=lambda k: k.name)
    out = np.zeros((len(values_list), len(knobs)))
    for r, values in enumerate(values_list):
        for j, k in enumerate(knobs):
            v = values.get(k.name, None)
            if v is None:
                continue
            if isinstance(v, (str, tuple)) and not (isinstance(v, tuple) and v[:1] == (-1,)):
                out[r, j] = k.candidates.index(v) if v in k.candidates else -1.0
            else:
                out[r, j] = _knob_value(v, 0)
    return out
