"""The tuning loop every tuner shares.

    tuner = RandomTuner(task)
    tuner.load_history(records)            # resume, or transfer from other tasks
    tuner.tune(n_trial=200, early_stopping=50, measurer=m, callbacks=[...])

Algorithm of :meth:`Tuner.tune`: measure the task's default config first
(it is the reference outputs are checked against, and the "before" of the
summary), then repeat: ask the tuner for a batch of unvisited configs (as
many as the measurer builds at once), measure them, hand the records to
:meth:`update` and to each callback ``cb(tuner, inputs, results)``, until
``n_trial`` configs are measured, the space is exhausted, or
``early_stopping`` trials in a row brought no improvement, or the
``deadline`` has passed.

A subclass implements :meth:`next_batch` (and :meth:`update` to learn);
it must add what it proposes to ``self.visited``.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass


@dataclass
class MeasureInput:
    """AutoTVM's MeasureInput: what was measured."""
    target: str
    task: object
    config: object   # a ConfigEntity


class Tuner:
    def __init__(self, task, seed: int | None = 0):
        self.task = task
        self.space = task.config_space
        self.visited: set[int] = set()
        self.rng = random.Random(seed)
        self.trials = 0              # configs measured by tune()
        self.failed = 0              # ... of which failed (any error code)
        self.best_cost = float("inf")
        self.best_index = None
        self.best_trial = 0          # the trial that found the best
        self.default_cost = None
        self.history = []            # (trial, best GFLOPS so far)
        self.costs: dict[int, list[float]] = {}   # config index -> its successful measurements
        self.confirming = False      # inside confirm(): callbacks see measurements again, not trials

    # ---- what a tuner implements
    def next_batch(self, n: int) -> list[int]:
        raise NotImplementedError

    def update(self, indices: list[int], records: list) -> None:
        """Learn from measured configs (failed ones have error_no != 0)."""

    def has_next(self) -> bool:
        return len(self.visited) < len(self.space)

    # ---- shared
    @property
    def best_flops(self) -> float:
        return self.task.flop / self.best_cost if self.best_cost < float("inf") else 0.0

    def _note(self, records) -> None:
        """Record the costs; the best config is the one with the lowest mean
        of its measurements (record.best_by_workload, as the log is read)."""
        for r in records:
            if r.ok:
                self.costs.setdefault(r.index, []).append(r.mean_cost)
        if not self.costs:
            return
        index = min(self.costs, key=lambda i: sum(self.costs[i]) / len(self.costs[i]))
        cost = sum(self.costs[index]) / len(self.costs[index])
        if index != self.best_index or cost < self.best_cost:
            if cost < self.best_cost:
                self.best_trial = self.trials
            self.best_cost, self.best_index = cost, index

    def confirm(self, k: int, measurer, callbacks=()) -> None:
        """Measure the `k` fastest configs again, one record each (handed
        to the callbacks: the log keeps them), and take the best by the
        mean of each one's measurements.  On a shared machine a single
        timing can be lucky by more than the configs differ: the best of
        hundreds of one-off timings is often such a one (a 1024^3 matmul's
        tuned best was 0.91x its default once, measured again)."""
        ranked = sorted(self.costs, key=lambda i: sum(self.costs[i]) / len(self.costs[i]))[:k]
        if len(ranked) < 2:
            return
        records = measurer.measure(self.task, ranked)
        self._note(records)
        inputs = [MeasureInput(self.task.target, self.task, self.space.get(i)) for i in ranked]
        self.confirming = True
        try:
            for cb in callbacks:
                cb(self, inputs, records)
        finally:
            self.confirming = False

    def load_history(self, records, learn: bool = True) -> int:
        """Mark the task's earlier records visited (and learn from them);
        returns how many configs they measured (a config confirmed has
        several records)."""
        mine = [r for r in records if r.workload == self.task.workload and r.target == self.task.target
                and r.code_hash == self.task.code_hash and 0 <= r.index < len(self.space)]
        for r in mine:
            self.visited.add(r.index)
            if r.index == self.space.default().index and r.ok:
                self.default_cost = r.mean_cost
        self._note(mine)
        if learn and mine:
            self.update([r.index for r in mine], mine)
        return len({r.index for r in mine})

    def tune(self, n_trial: int, measure_option=None, early_stopping: int | None = None,
             callbacks=(), measurer=None, deadline: float | None = None):
        """Measure up to `n_trial` configs (the default config among them);
        `deadline` (time.perf_counter() seconds): start no batch after it."""
        from ..measure import LocalMeasurer
        own = measurer is None
        if own:
            measurer = LocalMeasurer(measure_option)
        try:
            self._loop(n_trial, early_stopping, callbacks, measurer, deadline)
        finally:
            if own:
                measurer.close()
        return self

    def _loop(self, n_trial, early_stopping, callbacks, measurer, deadline=None):
        default = self.space.default().index
        first = measurer.ensure_reference(self.task)
        if first is not None and default not in self.visited and n_trial > 0:
            self.visited.add(default)
            self._after([default], [first], callbacks)
            if first.ok:
                self.default_cost = first.mean_cost
        while self.trials < n_trial and self.has_next():
            if early_stopping is not None and self.trials - self.best_trial >= early_stopping \
                    and self.best_index is not None:
                break
            if deadline is not None and time.perf_counter() >= deadline:
                break
            batch = self.next_batch(min(measurer.n_parallel, n_trial - self.trials))
            if not batch:
                break
            self._after(batch, measurer.measure(self.task, batch), callbacks)

    def _after(self, batch, records, callbacks):
        self.trials += len(records)
        self.failed += sum(1 for r in records if not r.ok)
        self._note(records)
        self.history.append((self.trials, self.best_flops))
        self.update(batch, records)
        inputs = [MeasureInput(self.task.target, self.task, self.space.get(i)) for i in batch]
        for cb in callbacks:
            cb(self, inputs, records)
