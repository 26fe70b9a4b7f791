"""Control flow: If -> relay's ``if`` with a region per branch; Scan and
Loop -> relay's ``loop`` (a counted loop), else unrolled.

A condition known at import time selects its branch, inlined.  Otherwise
the branches are ONNX subgraphs reading outer tensors by name; each becomes
a region (which sees the enclosing values) ending in ``yield``.  relay's if
yields one value, so several outputs travel as a tuple.

A Scan over its static sequence length, and a Loop whose trip count is
known at import time and whose condition stays true (absent, or a constant
the body passes through), become one ``loop`` whose body is the ONNX body
converted once: the step index picks each scan input's slice (``take``),
per-step outputs are stacked by the loop and moved to their scan axis
afterwards.  What a loop cannot carry is unrolled instead, with one line
on stderr saying why: a body whose state changes type from step to step
(a growing concatenation), or that needs a value known at import time
that only an unrolled step has (a shape computed from the iteration
number).  A Loop whose condition depends on run-time data is unsupported.
Unrolling is bounded: at most MAX_UNROLL steps, and every body converted
counts against the importer's one budget (importer.MAX_UNROLLED_NODES).
"""

from __future__ import annotations

from ....ir import types as T
from ..registry import converter
from .common import norm_axis

MAX_UNROLL = 1024


@converter("If", 1)
def if_node(cx, node):
    from ....ir.core import OP_CLASSES
    if "relay.if" not in OP_CLASSES:
        raise cx.unsupported("relay op 'if' is not available")
    known = cx.static(node.input(0), bound=False)
    if known is not None and known.size != 1:
        raise cx.error(f"its condition must hold one value, got {cx.ttype(node.input(0))}")
    if known is not None:
        # a condition that follows from constants (often from static shapes):
        # the branch taken, inline; the other may not even type-check
        return _taken_branch(cx, node, known)
    outs = _relay_if(cx, node)
    if outs is not None:
        return outs
    # branches relay's if cannot join (different shapes, an empty optional):
    # only a condition known now (a graph input's value the backend binds)
    # can choose between them
    known = cx.static_scalar(node.input(0), "condition (its branches have different types)")
    return _taken_branch(cx, node, known)


def _relay_if(cx, node):
    """relay's if over the two branches, or None when they do not join."""
    from ....dialects.relay.ops.control import IfOp, YieldOp
    from ....ir.core import Block, Region, Value
    from ....ir.diagnostics import DiagnosticError
    cond = node.input(0)
    if cx.shape(cond) != ():
        cond = cx.op("reshape", cond, newshape=())
    if cx.dtype(cond) is not T.i1:
        cond = cx.cast(cond, T.i1)
    regions, counts = [], set()
    for attr in ("then_branch", "else_branch"):
        block = Block()
        regions.append(Region([block]))
        outs = cx.importer.convert_subgraph(node.attr(attr), block)
        counts.add(len(outs))
        if not all(isinstance(v, Value) for v in outs) or len(counts) > 1:
            return _drop(regions)
        val = outs[0] if len(outs) == 1 else _tuple_in(cx, block, outs)
        block.append(YieldOp([val], (), None, (), cx.loc))
    try:
        op = IfOp.build(cond, regions=regions, loc=cx.loc)
    except DiagnosticError:
        return _drop(regions)
    cx.builder.insert(op)
    res = op.results[0]
    n = counts.pop()
    return res if n == 1 else [cx.get_item(res, i) for i in range(n)]


def _drop(regions):
    """Forget branches built for nothing: their ops' uses of outer values go too."""
    for r in regions:
        for op in list(r.blocks[0].ops):
            for inner in op.walk():
                inner.drop_operands()
    return None


def _taken_branch(cx, node, cond):
    branch = node.attr("then_branch" if bool(cond.reshape(-1)[0]) else "else_branch")
    return cx.importer.convert_subgraph(branch)


def _tuple_in(cx, block, values):
    from ....ir.builder import Builder
    saved = cx.builder
    cx.builder = Builder.at_end(block, cx.loc)
    try:
        return cx.op("tuple", *values)
    finally:
        cx.builder = saved


def _stack(cx, values, axis):
    if len(values) == 1:
        return cx.op("expand_dims", values[0], axis=axis)
    return cx.op("stack", *values, axis=axis)


def counted_loop(cx, trip, inits, step, names=None):
    """One relay ``loop`` of `trip` steps carrying `inits`.  `step(i,
    states)` builds a step's ops in the body (i: the step index, states:
    the carried block arguments) and returns (next states, per-step
    outputs).  Returns (final states, per-step outputs stacked on a leading
    axis of length trip).  A body whose next states do not have the
    carried types raises DiagnosticError; the loop is not inserted."""
    from ....dialects.relay.ops.control import YieldOp
    from ....dialects.relay.ops.loop import LoopOp
    from ....ir.builder import Builder
    from ....ir.core import Block, Region
    outer = cx.builder
    body = Block([T.TensorType((), T.i64)] + [cx.ttype(v) for v in inits], names)
    region = Region([body])
    cx.builder = Builder.at_end(body, outer.loc)
    try:
        nxt, outs = step(body.args[0], list(body.args[1:]))
        body.append(YieldOp([*nxt, *outs], (), None, (), outer.loc))
        op = LoopOp.build(*inits, loc=outer.loc, regions=[region], trip_count=int(trip))
        op.verify_()
    except BaseException:
        _drop([region])     # its ops' uses of outer values go with it
        raise
    finally:
        cx.builder = outer
    cx.builder.insert(op)
    res = op.results[0]
    k = len(inits)
    return ([cx.get_item(res, j) for j in range(k)],
            [cx.get_item(res, k + j) for j in range(len(outs))])


def _as_loop(cx, node, build):
    """(`build()`, None): the node as a relay loop; or (None, why not)."""
    from ....ir.diagnostics import DiagnosticError
    try:
        return build(), None
    except DiagnosticError as e:
        return None, e.diagnostics[0].message.splitlines()[0] if e.diagnostics else str(e)


def _say_unrolled(node, why):
    import sys
    sys.stderr.write(f"tvmd: {node.describe()} is unrolled, not a relay loop: {why}\n")


def _move_leading_axis(cx, v, axis):
    """`v` with its axis 0 moved to `axis` (a stacked scan output to its scan axis)."""
    if axis == 0:
        return v
    rank = cx.rank(v)
    perm = list(range(1, axis + 1)) + [0] + list(range(axis + 1, rank))
    return cx.op("transpose", v, axes=perm)


def _scan_counts(cx, node, inputs, m):
    """(n states, k scan outputs) of a Scan with `inputs` (sequence_lens
    left out) and m = num_scan_inputs, checked against its body."""
    body = node.attr("body")
    if not 1 <= m <= len(inputs):
        raise cx.error(f"num_scan_inputs must be 1 to its {len(inputs)} state and scan input(s), got {m}")
    n = len(inputs) - m
    k = len(body.output) - n
    if k < 0:
        raise cx.error(f"its body has {len(body.output)} output(s), fewer than its {n} state(s)")
    if node.num_outputs > n + k:
        raise cx.error(f"has {node.num_outputs} outputs, but its body makes {n} state(s) and {k} scan output(s)")
    return n, k


def _list_attr(cx, node, name, count, default):
    """An attribute with one entry per scan input or output (`count`)."""
    v = node.attr(name)
    if not v:
        return [default] * count
    if len(v) != count:
        raise cx.error(f"attribute '{name}' must have {count} entries, got {len(v)}")
    return list(v)


def _scan_core(cx, node, states, scans, in_axes, in_dirs, out_axes, out_dirs):
    """The v9 Scan over `scans` (sliced along their axes); returns the final
    states and the stacked scan outputs."""
    body = node.attr("body")
    n = len(states)
    k = len(body.output) - n
    for s in scans:
        if cx.rank(s) == 0:
            raise cx.error(f"scan inputs must have an axis to scan, got {cx.ttype(s)}")
    lengths = {cx.static_shape(s, "scan input")[a] for s, a in zip(scans, in_axes)}
    if len(lengths) != 1:
        raise cx.error(f"scan inputs have different lengths {sorted(lengths)}")
    length = lengths.pop()
    looped, why = _as_loop(cx, node, lambda: _scan_loop(cx, node, states, scans, in_axes, in_dirs,
                                                       out_axes, out_dirs, length))
    if looped is not None:
        return looped
    if length > MAX_UNROLL:
        raise cx.unsupported(f"a scan of {length} steps (not a relay loop: {why}; unrolled, at most {MAX_UNROLL})")
    _say_unrolled(node, why)
    collected = [[] for _ in range(k)]
    for t in range(length):
        slices = [cx.op("take", s, cx.const(length - 1 - t if d else t, T.i64), axis=a)
                  for s, a, d in zip(scans, in_axes, in_dirs)]
        outs = cx.importer.convert_subgraph(body, inputs=list(states) + slices)
        states = outs[:n]
        for j in range(k):
            collected[j].append(outs[n + j])
    if length == 0 and k:
        raise cx.unsupported("a scan of length 0")
    stacked = []
    for j in range(k):
        vals = collected[j][::-1] if out_dirs[j] else collected[j]
        axis = norm_axis(cx, out_axes[j], cx.rank(vals[0]) + 1)
        stacked.append(_stack(cx, vals, axis))
    return list(states), stacked


def _scan_loop(cx, node, states, scans, in_axes, in_dirs, out_axes, out_dirs, length):
    """_scan_core as one relay loop: (final states, stacked scan outputs)."""
    body = node.attr("body")
    n = len(states)

    def step(i, carried):
        back = None
        slices = []
        for s, a, d in zip(scans, in_axes, in_dirs):
            if d and back is None:
                back = cx.op("subtract", cx.const(length - 1, T.i64), i)
            slices.append(cx.op("take", s, back if d else i, axis=a))
        outs = cx.importer.convert_subgraph(body, inputs=carried + slices)
        return outs[:n], outs[n:]
    finals, stacked = counted_loop(cx, length, list(states), step)
    outs = []
    for v, axis, d in zip(stacked, out_axes, out_dirs):
        if d:
            v = cx.op("reverse", v, axis=0)
        outs.append(_move_leading_axis(cx, v, norm_axis(cx, axis, cx.rank(v))))
    return finals, outs


@converter("Scan", 9)
def scan(cx, node):
    m = node.attr("num_scan_inputs")
    inputs = list(node.inputs)
    n, k = _scan_counts(cx, node, inputs, m)
    states, scans = inputs[:n], inputs[n:]
    in_axes = [norm_axis(cx, a, cx.rank(s)) for a, s in zip(_list_attr(cx, node, "scan_input_axes", m, 0), scans)]
    in_dirs = _list_attr(cx, node, "scan_input_directions", m, 0)
    out_axes = _list_attr(cx, node, "scan_output_axes", k, 0)
    out_dirs = _list_attr(cx, node, "scan_output_directions", k, 0)
    finals, stacked = _scan_core(cx, node, states, scans, in_axes, in_dirs, out_axes, out_dirs)
    return finals + stacked


@converter("Scan", 8)
def scan_v8(cx, node):
    """Opset 8: a leading batch axis on every input and sequence_lens first;
    each batch entry is scanned alone (axis 0 of its scan inputs)."""
    m = node.attr("num_scan_inputs")
    lens, inputs = node.input(0), list(node.inputs[1:])
    n, k = _scan_counts(cx, node, inputs, m)
    dirs = _list_attr(cx, node, "directions", m, 0)
    for j, v in enumerate(inputs):
        if cx.rank(v) < (2 if j >= n else 1):
            raise cx.error(f"its inputs need a leading batch axis (and scan inputs a sequence axis), "
                           f"got {cx.ttype(v)}")
    batch = cx.static_shape(inputs[0])[0]
    if batch > MAX_UNROLL:
        raise cx.unsupported(f"a scan over a batch of {batch} (unrolled, at most {MAX_UNROLL})")
    if lens is not None:
        lv = cx.static(lens)
        seq = cx.static_shape(inputs[n])[1]
        if lv is None or (lv != seq).any():
            raise cx.unsupported("sequence_lens shorter than the sequence")
    per = [[] for _ in range(n + k)]
    for b in range(batch):
        row = [cx.op("take", v, cx.const(b, T.i64), axis=0) for v in inputs]
        finals, stacked = _scan_core(cx, node, row[:n], row[n:], [0] * m, dirs, [0] * k, [0] * k)
        for j, v in enumerate(finals + stacked):
            per[j].append(v)
    return [_stack(cx, vals, 0) for vals in per]


@converter("Loop", 1)
def loop(cx, node):
    import numpy as np
    body = node.attr("body")
    trip_v, cond_v = node.input(0), node.input(1)
    carried = list(node.inputs[2:])
    n = len(carried)
    k = len(body.output) - 1 - n
    if k < 0:
        raise cx.error(f"its body has {len(body.output)} output(s); it needs the condition and its "
                       f"{n} carried value(s)")
    if node.num_outputs > n + k:
        raise cx.error(f"has {node.num_outputs} outputs, but its body makes {n} carried value(s) and "
                       f"{k} scan output(s)")
    trip = None
    if trip_v is not None:
        trip = int(cx.static_scalar(trip_v, "trip count M"))
    cond = cond_v if cond_v is not None else cx.const(True)
    c0 = cx.static(cond)
    if trip is not None and c0 is not None and np.asarray(c0).size == 1 and bool(np.asarray(c0).reshape(-1)[0]):
        looped, why = _as_loop(cx, node, lambda: _loop_loop(cx, node, trip, cond, carried, n))
        if looped is not None:
            return looped[0] + looped[1]
        if trip > MAX_UNROLL and cond_v is None:   # nothing to stop it earlier: say so now
            raise cx.unsupported(f"a loop of {trip} iterations (not a relay loop: {why}; "
                                 f"unrolled, at most {MAX_UNROLL})")
        _say_unrolled(node, why)
    limit = trip if trip is not None else MAX_UNROLL
    collected = [[] for _ in range(k)]
    i = 0
    while True:
        c = cx.static(cond)
        if c is None:
            raise cx.unsupported("a loop condition computed at run time")
        if np.asarray(c).size != 1:
            raise cx.error(f"its condition must hold one value, got {cx.ttype(cond)}")
        if not bool(np.asarray(c).reshape(-1)[0]) or i >= limit:
            break
        if i >= MAX_UNROLL:     # a static trip count too: a while loop's M is often INT64_MAX
            raise cx.unsupported(f"a loop of more than {MAX_UNROLL} iterations (unrolled"
                                 f"{'' if trip is None else f'; trip count M is {trip}'})")
        outs = cx.importer.convert_subgraph(body, inputs=[cx.const(i, T.i64), cond] + carried)
        cond, carried = outs[0], outs[1:1 + n]
        for j in range(k):
            collected[j].append(outs[1 + n + j])
        i += 1
    if k and i == 0:
        raise cx.unsupported("a loop that runs no iteration and has scan outputs")
    return carried + [_stack(cx, vals, 0) for vals in collected]


def _loop_loop(cx, node, trip, cond, carried, n):
    """A Loop of `trip` iterations whose condition stays true, as one relay
    loop: (final carried values, stacked scan outputs)."""
    import numpy as np
    body = node.attr("body")

    def step(i, states):
        outs = cx.importer.convert_subgraph(body, inputs=[i, cond] + states)
        c = cx.static(outs[0])
        if c is None or np.asarray(c).size != 1 or not bool(np.asarray(c).reshape(-1)[0]):
            raise cx.unsupported("its condition may turn false before the trip count")
        return outs[1:1 + n], outs[1 + n:]
    return counted_loop(cx, trip, list(carried), step)
