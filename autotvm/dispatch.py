"""Applying a tuning log: the best record per workload, for one target.

    history = HistoryBest(records, target="llvm", source="tune.json")
    applied, fell_back = apply_best(module, history)   # every template of the module
    for line in history.report(): print(line)

A record applies to a template when its target is the build's (the CPU
spelled out, see task.canonical_target), its workload (task name and
argument types) is the template's, and its code hash is the template's (the
template has not changed since it was measured; a record without one, as
classic AutoTVM wrote them, is taken on trust).  Of those, the fastest
successful config wins (by the mean of its measurements, when it has
several: record.best_by_workload).  Nothing is skipped in silence: :meth:`report` gives one
line per reason records were passed over (another target, another template
text), and one line for the templates that had no record and took their
default config: how many, of how many.
"""

from __future__ import annotations

from collections import Counter

from .record import best_by_workload


class HistoryBest:
    def __init__(self, records, target: str | None = None, source: str = "the tuning log"):
        from .task import canonical_target
        self.target = canonical_target(target)
        self.source = source
        self.by_workload = {}          # workload -> {code_hash: best record}
        other = {}
        for r in records:
            if r.ok and r.target != self.target:
                other.setdefault(r.target, set()).add(r.workload)
        for (workload, code_hash), r in best_by_workload(records, self.target,
                                                         key=lambda r: (r.workload, r.code_hash)).items():
            self.by_workload.setdefault(workload, {})[code_hash] = r
        self.other_targets = {t: len(w) for t, w in other.items()}   # target -> workloads
        self.stale = Counter()         # workload: records for another version of the template
        self.applied = 0
        self.fell_back = 0

    def query(self, task):
        """The best record for `task`, or None."""
        per = self.by_workload.get(task.workload)
        if not per:
            return None
        r = per.get(task.code_hash) or per.get(None)   # classic AutoTVM logs have no code hash
        if r is None:
            self.stale[task.name] += 1
        return r

    def report(self) -> list[str]:
        lines = []
        for tgt, n in sorted(self.other_targets.items()):
            lines.append(f"{self.source}: skipped the records of {n} workload(s) tuned for '{tgt}'; "
                         f"this build is for '{self.target}'")
        for name, n in sorted(self.stale.items()):
            lines.append(f"{self.source}: skipped the records of '{name}': they were measured on another "
                         f"version of its template (the code hash differs)")
        if self.fell_back:
            total = self.applied + self.fell_back
            lines.append(f"{self.source}: {self.fell_back} of {total} tunable kernel(s) have no record for "
                         f"'{self.target}' and use their default config")
        return lines


def apply_best(module, history: HistoryBest | None) -> tuple[int, int]:
    """Write the best config into each template of `module` (the default
    where there is none; with no history, the defaults, silently: an
    untuned build).  Returns (applied, fell back)."""
    from .space import instantiate, templates
    from .task import task_of
    applied = fell_back = 0
    for func, space in templates(module):
        if history is None:
            instantiate(space, space.default())
            continue
        task = task_of(func, history.target)
        r = history.query(task)
        entity = config_of(space, r) if r is not None else None
        if entity is not None:
            applied += 1
        else:
            entity = space.default()
            fell_back += 1
        instantiate(space, entity)
    if history is not None:
        history.applied += applied
        history.fell_back += fell_back
    return applied, fell_back


def config_of(space, record):
    """The config of `space` a record names, or None when the record's
    index and knob values do not describe a config of this space."""
    if 0 <= record.index < len(space):
        entity = space.get(record.index)
        if entity.values == record.values():
            return entity
    return None
