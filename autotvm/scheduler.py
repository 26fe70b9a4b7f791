"""The task scheduler: tuning the tasks of a model together.

    tuners = tune_tasks(tasks, weights, measurer, trials=2000, tuner="xgb",
                        history=records, callbacks=[log_to_file(writer)],
                        time_budget=1200)

Algorithm:

1. every task gets its tuner; its own earlier records (``history``) resume
   it, other tasks' records of the same template pretrain a model-based
   tuner (transfer learning);
2. each task's default config is measured (one trial), so the scheduler
   knows the model's time: a task's **share** is its default cost times
   its weight (how many kernels of the model it stands for);
3. the trial budget is spread by share (extract.allocate_trials: at least
   one each, at most its space), and with a ``time_budget`` the seconds
   are spread the same way: when a task's turn comes it gets its share of
   the time still left among the tasks still to go;
4. the tasks are tuned largest share first, each until its trials, its
   time, its space or ``early_stopping`` runs out;
5. a task's ``confirm`` fastest configs are measured once more, and its
   best is the one with the lowest mean (the log keeps every measurement,
   and apply-history-best reads it the same way).

Records reach the callbacks as they are measured; ``history`` grows with
them, so later tasks learn from earlier ones of the same template.
"""

from __future__ import annotations

import time


CONFIRM_TOP = 3   # a task's fastest configs measured once more after its trials


def tune_tasks(tasks, weights, measurer, trials: int, tuner: str = "xgb", history=None, callbacks=(),
               early_stopping=None, time_budget: float | None = None, seed: int = 0, progress=None,
               confirm: int = CONFIRM_TOP):
    """Tune `tasks`; returns their tuners (in task order), each with
    ``total_trials`` (its records, earlier ones included) and ``share``.
    `progress(n, count, budget, done)` makes a per-task callback (a
    progress line) or None.  `confirm`: how many of a task's fastest
    configs are measured again once its trials are done (Tuner.confirm)."""
    from .extract import allocate_trials
    from .tuner import make_tuner
    seen = history if history is not None else []
    start = time.perf_counter()

    def keep(_tuner, _inputs, records):
        seen.extend(records)
    cbs = list(callbacks) + [keep]
    tuners, done = [], []
    for task in tasks:
        t = make_tuner(tuner, task, seed=seed)
        done.append(t.load_history(seen) if seen else 0)
        if len(tasks) > 1:
            t.tune(1 if done[-1] == 0 else 0, measurer=measurer, callbacks=cbs)
        tuners.append(t)
    costs = [t.default_cost or t.best_cost for t in tuners]
    finite = [c for c in costs if c < float("inf")] or [1.0]
    shares = [w * (c if c < float("inf") else max(finite)) for w, c in zip(weights, costs)]
    budget = [trials] if len(tasks) == 1 else allocate_trials(trials, shares, [len(t.space) for t in tasks])
    order = sorted(range(len(tasks)), key=lambda i: -shares[i])
    for n, i in enumerate(order, 1):
        t = tuners[i]
        t.share = shares[i]
        deadline = None
        if time_budget is not None:
            left = time_budget - (time.perf_counter() - start)
            rest = sum(shares[j] for j in order[n - 1:]) or 1.0
            deadline = time.perf_counter() + max(0.0, left) * shares[i] / rest
        bar = progress(n, len(tasks), budget[i], done[i] + t.trials) if progress else None
        try:
            t.tune(max(0, budget[i] - done[i] - t.trials), early_stopping=early_stopping, measurer=measurer,
                   callbacks=cbs + ([bar] if bar else []), deadline=deadline)
        finally:
            if bar is not None and hasattr(bar, "finish"):
                bar.finish()
        if t.trials and confirm:
            t.confirm(confirm, measurer, cbs)
        t.total_trials = done[i] + t.trials
    for t, s in zip(tuners, shares):
        t.share = s
    return tuners
