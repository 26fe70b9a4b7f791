"""Tasks of a model: its kernels' default schedules, as templates.

    tasks, weights = extract_from_relay(module, target="llvm")

Algorithm: the model goes through the graph passes ``build`` runs at the
same opt level (runtime/build.py graph_pipeline: fusion, layouts), then each
primitive function is lowered alone to a te.func with its default schedule
(conversion/relay_to_te), which is a template: its tile sizes are knobs.
Templates with the same workload and text are one task; a task's weight is
how many kernels of the model it stands for (a ResNet's repeated blocks
share tasks: counted per call, as fusion already shares one function
between equal groups).  Functions that do not lower (no TE compute, dynamic shapes)
are not tasks; :func:`extract_from_relay` returns them in ``skipped``.
"""

from __future__ import annotations


def extract_from_relay(module, target: str = "llvm", opt_level: int = 3):
    """(tasks, weights, skipped) of a relay module (changed in place by the
    graph passes); weights[i] is the number of kernels of tasks[i]."""
    from ..conversion.relay_to_te.outline import outline_loose_ops
    from ..dialects.relay.ops.function import CallOp
    from ..dialects.relay.ops.function import FuncOp as RelayFuncOp
    from ..ir.pass_manager import PassContext
    from ..runtime.build import fallback_reason, graph_pipeline, lower_to_te_alone
    from .space import templates
    from .task import canonical_target, task_of
    ctx = PassContext()
    for p in graph_pipeline(opt_level, target):
        p.run(module, ctx)
    outline_loose_ops(module)
    calls = {}
    for op in module.walk():
        if isinstance(op, CallOp):
            calls[op.callee] = calls.get(op.callee, 0) + 1
    canonical = canonical_target(target)
    tasks, weights, skipped, index = [], [], [], {}
    for rf in [op for op in module.body.ops if isinstance(op, RelayFuncOp) and "primitive" in op.attributes]:
        try:
            scratch, _ = lower_to_te_alone(rf, target)
        except Exception as e:   # noqa: BLE001 - the build would interpret it: not a task
            skipped.append((rf.sym_name, fallback_reason(e)))
            continue
        for func, _space in templates(scratch):
            t = task_of(func, canonical, target)
            key = (t.workload, t.code_hash)
            n = calls.get(rf.sym_name, 1)   # fusion shares one function between equal call sites
            if key in index:
                weights[index[key]] += n
            else:
                index[key] = len(tasks)
                tasks.append(t)
                weights.append(n)
    return tasks, weights, skipped


def allocate_trials(budget: int, shares, sizes, floor: int = 1):
    """Spread `budget` trials over tasks in proportion to `shares` (their
    part of the model's time), each at least `floor` and at most its space
    size; what a capped task cannot use goes to the others, by share."""
    n = len(shares)
    alloc = [min(floor, s) for s in sizes]
    left = budget - sum(alloc)
    open_ = [i for i in range(n) if alloc[i] < sizes[i]]
    while left > 0 and open_:
        total = sum(max(shares[i], 1e-12) for i in open_)
        given = 0
        for i in open_:
            want = int(left * max(shares[i], 1e-12) / total)
            take = min(want, sizes[i] - alloc[i])
            alloc[i] += take
            given += take
        if given == 0:   # rounding: one more to the largest share with room
            i = max(open_, key=lambda j: shares[j])
            alloc[i] += 1
            given = 1
        left -= given
        open_ = [i for i in open_ if alloc[i] < sizes[i]]
    return alloc
