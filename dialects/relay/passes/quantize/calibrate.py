"""Calibrate: give every simulated_quantize point its scale (TVM's _calibrate.py).

A point's *threshold* ``t`` is the largest magnitude it should represent;
its ``dom_scale`` is ``t / 2^(nbit - 1)`` and it clips to
``+-(2^(nbit - 1) - 1)`` (TVM's _set_params, sign = true).

Weights (kind ``weight``, a constant):

    power2   t = 2^ceil(log2(max|w|))                (TVM's default)
    max      t = max|w|
    (per_channel: one t per output channel, over that channel's values)

Everything else (kinds ``input`` and ``activation``), by calibrate_mode:

    global_scale   t = global_scale (8.0), no data needed
    kl_divergence  the KL-optimal threshold of the values seen (kl_divergence.py)
    percentile     the `percentile` quantile of |x| (np.partition, as TVM)

The values seen come from TVM's stats collector: run @main's float graph in
the reference interpreter on every calibration sample, every
simulated_quantize passing its input through (kind identity), and record
each non-weight point's input.  A threshold of 0 (a point that only ever
saw zeros) becomes 1.0, since any scale represents zeros.
"""

from __future__ import annotations

from .....ir.diagnostics import DiagnosticError
from .. import defining_constant
from .annotate import WEIGHT
from ...ops.function import ConstantOp
from ...ops.qnn import SimulatedQuantizeOp


def weight_threshold(w, mode: str, axis):
    """Threshold(s) of weight array `w`: a float, or one per index of `axis`."""
    import numpy as np
    a = np.abs(np.asarray(w, np.float64))
    if axis is None:
        m = np.asarray(a.max() if a.size else 0.0)
    else:
        m = np.moveaxis(a, axis, 0).reshape(a.shape[axis], -1).max(axis=1)
    if mode == "power2":
        with np.errstate(divide="ignore"):
            t = np.where(m > 0, 2.0 ** np.ceil(np.log2(np.where(m > 0, m, 1.0))), 1.0)
    else:
        t = np.where(m > 0, m, 1.0)
    return t


def percentile_threshold(values, percentile: float) -> float:
    import numpy as np
    x = np.abs(np.asarray(values).reshape(-1))
    if x.size == 0:
        return 0.0
    k = min(int(x.size * percentile), x.size - 1)
    return float(np.partition(x, k)[k])


def collect_stats(module, func, points, samples):
    """{point: concatenated flat input values} over all `samples`.

    TVM's CreateStatsCollector, on a temporary copy of `func` whose
    simulated_quantize ops are identities and which also returns the input
    of every non-weight point; the reference interpreter runs it."""
    import numpy as np
    from .....ir import types as T
    from ...interpreter import check_array, run_function
    watched = [p for p in points if p.attributes["kind"] != WEIGHT]
    if not watched:
        return {}
    mapping: dict = {}
    probe = func.clone(mapping)
    names = {op.attributes.get("sym_name") for op in module.body.ops}
    name = "__quantize_stats"
    while name in names:
        name += "_"
    probe.attributes["sym_name"] = name
    for op in probe.walk():
        if isinstance(op, SimulatedQuantizeOp):
            op.attributes["kind"] = "identity"
    ret = probe.body.last
    n_out = len(ret.operands)
    ret.set_operands(list(ret.operands) + [mapping[p.results[0]].defining_op().operands[0] for p in watched])
    probe.attributes["function_type"] = T.FunctionType(func.function_type.inputs, [v.type for v in ret.operands])
    module.body.append(probe)
    seen = [[] for _ in watched]
    try:
        for args in samples:
            if len(args) != len(func.body.args):
                raise DiagnosticError(func.loc, f"a calibration sample has {len(args)} array(s); "
                                                f"@{func.sym_name} takes {len(func.body.args)}")
            for i, (p, a) in enumerate(zip(func.body.args, args)):
                check_array(func, np.asarray(a), p.type, f"calibration sample argument {i} is")
            outs = run_function(module, name, *args)
            outs = outs if isinstance(outs, tuple) else (outs,)
            for i, v in enumerate(outs[n_out:]):
                seen[i].append(np.asarray(v).reshape(-1))
    finally:
        probe.erase()
    return {p: np.concatenate(v) for p, v in zip(watched, seen)}


def calibrate(cfg, module, func, points, samples):
    """Set the dom_scale of every point in `points` (simulated_quantize ops)."""
    import numpy as np
    stats = collect_stats(module, func, points, samples) if cfg.calibrate_mode != "global_scale" else {}
    for p in points:
        kind = p.attributes["kind"]
        if kind == WEIGHT:
            c = defining_constant(p.operands[0])
            if c is None:
                raise p.error("is a weight point whose data is not a constant")
            axis = p.attributes["axis"]
            w = c.attributes["value"].array
            t = weight_threshold(w, cfg.weight_scale, axis % w.ndim if cfg.per_channel and axis != -1 else None)
        elif cfg.calibrate_mode == "global_scale":
            t = np.asarray(cfg.global_scale)
        elif cfg.calibrate_mode == "kl_divergence":
            from .kl_divergence import find_scale_by_kl
            t = np.asarray(find_scale_by_kl(stats[p]))
        else:
            t = np.asarray(percentile_threshold(stats[p], cfg.percentile))
        t = np.where(np.isfinite(t) & (t > 0), t, 1.0)
        dom = np.asarray(cfg.dom_scale(kind, t), np.float32)
        const = ConstantOp.get(dom)
        p.parent.insert_before(p, const)
        const.results[0].name = "dom_scale"
        old = p.operands[1]
        p.set_operand(1, const.results[0])
        d = old.defining_op()
        if d is not None and not old.uses:
            d.erase()
