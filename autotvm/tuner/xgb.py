"""XGBTuner: an XGBoost cost model ranks configs, simulated annealing
proposes them (AutoTVM's XGBTuner, a model-based tuner).

Algorithm::

    until `first_fit` configs are measured (FIRST_FIT = 8, or plan_size,
    or an eighth of a small space, whichever is least): measure random
    unvisited configs
    every `refit_every` measured configs after that (REFIT_EVERY):
        fit   y = throughput (flop / mean cost; 0 for a failed config) of
              every measured config of the task, normalised by the best;
              xgboost.train with rank:pairwise (loss_type="rank") or
              reg:squarederror (loss_type="reg").  Two boosters: one on
              knob features (cheap, for the annealer's walk) and, with
              feature_type="itervar", one on loop features that re-ranks
              the annealer's candidates (features.py says why).
        plan  SA (sa.py) keeps the top 4 x plan_size unvisited configs
              (with SCORE_ALL unvisited configs or fewer, the knob model
              ranks them all instead);
              re-rank them with the loop model; then pick plan_size of
              them greedily by score, penalising a candidate that
              differs in at most one knob from a config already picked
              (a plan of near-copies explores little)
    next_batch(n): each slot takes the next unvisited config of the plan,
        or with probability epsilon (5%) a random unvisited config

Fitting early and often is what makes the model pay.  Over the ten
tables of bench/tune_search.py --replay (10 seeds, default config out;
five small spaces, flat at the top, and five of AutoTVM's tutorial
template sampled at 999 configs), random search's expected trials to 95%
of the best over XGBoost's, geometric mean over all ten / the five large:
first model at 32 random configs 1.37 / 1.48, at 16 1.57 / 1.88, at 8
1.64 / 2.18, at 4 1.51 / 1.77 (refit every 8; every 4: 1.72 / 2.21 at
twice the refits, every 16: 1.51 / 1.92).  On two templates measured
only after 8 was chosen: 2.30 at 32, 2.92 at 8 (20 seeds).  A model on
8 configs is weak, but it is better than the random draws it replaces,
and each refit makes it better.  A refit costs about 0.1 s and a re-plan's new loop
features 2.6 ms a config.

Transfer learning: :meth:`load_history` (or :meth:`transfer`) given
records of other tasks of the same template (same task name and knob
names, other shapes) fits a base booster on their knob features, each
task's throughput normalised by its own best (and each task its own
ranking group).  The base model plans from the first batch, and every
later model is fitted on top of its predictions (base_margin): the task's
own measurements correct it.  Knob features, not loop features, because a
record carries its knob values but not its template text.
"""

from __future__ import annotations

import numpy as np

from .. import features as F
from .base import Tuner
from .sa import anneal, sample_unvisited, unvisited

FIRST_FIT = 8      # random configs measured before the first model
REFIT_EVERY = 8    # measured configs between refits (and re-plans)
SCORE_ALL = 4096   # at most this many unvisited configs: the knob model ranks them all


class _Booster:
    """One xgboost model over a feature matrix."""

    def __init__(self, loss_type: str, num_threads: int, seed: int, rounds: int = 80):
        obj = {"rank": "rank:pairwise", "reg": "reg:squarederror"}[loss_type]
        self.params = {"objective": obj, "max_depth": 4, "eta": 0.2, "gamma": 1e-4, "min_child_weight": 1,
                       "subsample": 1.0, "lambda": 1.0, "alpha": 0.0, "nthread": num_threads,
                       "seed": seed, "tree_method": "hist", "verbosity": 0}
        self.rounds = rounds
        self.booster = None

    def fit(self, X, y, groups=None, base_margin=None):
        import xgboost as xgb
        d = xgb.DMatrix(X, label=y, base_margin=base_margin, nthread=self.params["nthread"])
        if groups is not None and self.params["objective"].startswith("rank"):
            d.set_group(groups)
        self.booster = xgb.train(self.params, d, num_boost_round=self.rounds)
        return self

    def predict(self, X, base_margin=None):
        if len(X) == 0:
            return np.zeros(0)
        return self.booster.inplace_predict(X, base_margin=base_margin)


class XGBTuner(Tuner):
    def __init__(self, task, plan_size: int = 64, feature_type: str = "itervar", loss_type: str = "rank",
                 num_threads: int | None = None, seed: int = 0, epsilon: float = 0.05,
                 diversity: float = 0.15, refit_every: int = REFIT_EVERY, first_fit: int = FIRST_FIT):
        if feature_type not in ("itervar", "knob"):
            raise ValueError(f"feature_type is 'itervar' or 'knob', not {feature_type!r}")
        if loss_type not in ("rank", "reg"):
            raise ValueError(f"loss_type is 'rank' or 'reg', not {loss_type!r}")
        super().__init__(task, seed=seed)
        self.plan_size, self.feature_type, self.loss_type = plan_size, feature_type, loss_type
        # one thread unless asked: the model sees a few hundred rows and SA
        # predicts 128 at a time, where OpenMP threads cost more than they
        # save, and 10x more when the cores are busy (measured: 0.4 s vs 3.6 s
        # for 120 trials with two threads on two loaded cores)
        self.num_threads = num_threads or 1
        self.epsilon, self.diversity, self.seed = epsilon, diversity, seed
        self.nprng = np.random.default_rng(seed)
        self.lens = [len(k) for k in self.space.knobs]
        self.first_fit = max(1, min(plan_size, first_fit, max(8, len(self.space) // 8)))
        self.refit_every = max(1, refit_every)
        self.next_fit = self.first_fit
        self.xs: list[int] = []
        self.ys: list[float] = []
        self.knob_model = self.loop_model = self.base = None
        self.plan: list[int] = []
        self.planned = False       # a model (own or transferred) made the current plan
        self.sa_points = None      # SA chains persist between plans

    # ---- proposing
    def next_batch(self, n: int) -> list[int]:
        if not self.planned and self.base is not None:
            self._replan()
        out = []
        total = len(self.space)
        while len(out) < n and len(self.visited) < total:
            i = None
            if self.planned and self.rng.random() >= self.epsilon:
                while self.plan and i is None:
                    j = self.plan.pop(0)
                    i = None if j in self.visited else j
            if i is None:
                (i,) = sample_unvisited(self.rng, total, self.visited, 1)
            self.visited.add(i)
            out.append(i)
        return out

    # ---- learning
    def update(self, indices, records) -> None:
        for i, r in zip(indices, records):
            self.xs.append(i)
            self.ys.append((self.task.flop or 1) / r.mean_cost if r.ok and r.mean_cost > 0 else 0.0)
        if len(self.xs) >= self.next_fit and max(self.ys, default=0) > 0:
            self._fit()
            self._replan()
            self.next_fit = len(self.xs) + self.refit_every

    def _fit(self):
        y = np.asarray(self.ys) / max(self.ys)
        groups = [len(y)]
        Xk = F.knob_features(self.task, self.xs)
        margin = self.base.predict(Xk) if self.base is not None else None
        self.knob_model = _Booster(self.loss_type, self.num_threads, self.seed).fit(Xk, y, groups, margin)
        if self.feature_type == "itervar":
            Xl = F.itervar_features(self.task, self.xs)
            self.loop_model = _Booster(self.loss_type, self.num_threads, self.seed).fit(Xl, y, groups, margin)

    def _score_knob(self, idx):
        X = F.knob_features(self.task, idx)
        if self.knob_model is None:
            return self.base.predict(X)
        return self.knob_model.predict(X, self.base.predict(X) if self.base is not None else None)

    def _replan(self):
        k = self.plan_size * (4 if self.loop_model is not None else 2)
        free = len(self.space) - len(self.visited)
        if free <= SCORE_ALL:
            # few configs left: rank them all rather than the annealer's walk
            # (which, where most of the space is visited, rarely lands on one)
            left = np.asarray(unvisited(len(self.space), self.visited), dtype=np.int64)
            order = np.argsort(-np.asarray(self._score_knob(left)), kind="stable")
            cands = left[order[:k]].tolist()
        else:
            cands, self.sa_points = anneal(self._score_knob, self.lens, self.visited, k, self.nprng,
                                           start=self.sa_points)
        if not cands:
            self.plan, self.planned = [], True
            return
        if self.loop_model is not None:
            F.warm(self.task, cands)
            X = F.itervar_features(self.task, cands)
            margin = self.base.predict(F.knob_features(self.task, cands)) if self.base is not None else None
            scores = self.loop_model.predict(X, margin)
        else:
            scores = self._score_knob(np.asarray(cands, dtype=np.int64))
        self.plan = self._diverse(cands, np.asarray(scores), self.plan_size)
        self.planned = True

    def _diverse(self, cands, scores, n):
        """Greedy pick by rank score (1 for the best, falling linearly),
        minus `diversity` for a candidate within one knob of a config
        already picked: a close copy of a pick is taken only when nothing
        else scores near it."""
        order = np.argsort(-scores, kind="stable")
        cands = np.asarray(cands, dtype=np.int64)[order]
        rank = 1.0 - np.arange(len(cands)) / max(len(cands), 1)
        d = F.digits(self.task, cands)
        penalty = np.zeros(len(cands))
        free = np.ones(len(cands), dtype=bool)
        out = []
        for _ in range(min(n, len(cands))):
            j = int(np.argmax(np.where(free, rank - penalty, -np.inf)))
            free[j] = False
            out.append(int(cands[j]))
            near = (d != d[j]).sum(axis=1) <= 1
            penalty[near] = self.diversity   # once: near one picked config or not
        return out

    # ---- transfer learning
    def load_history(self, records, learn: bool = True) -> int:
        """The task's own records mark visited (and train, as in Tuner);
        records of other tasks of the same template pretrain the model."""
        n = super().load_history(records, learn)
        others = [r for r in records if r.task == self.task.name and r.target == self.task.target
                  and r.workload != self.task.workload]
        if learn and others:
            self.transfer(others)
        return n

    def transfer(self, records) -> int:
        """Fit the base model on other tasks' records of this template
        (same knob names); returns how many records it used."""
        names = {k.name for k in self.space.knobs}
        groups: dict = {}
        for r in records:
            if {e[0] for e in r.entity} == names:
                groups.setdefault(r.workload, []).append(r)
        X, y, sizes = [], [], []
        for recs in groups.values():
            speed = np.array([1.0 / r.mean_cost if r.ok and r.mean_cost > 0 else 0.0 for r in recs])
            if speed.max() <= 0:
                continue
            X.append(F.knob_features_of_values(self.task, [r.values() for r in recs]))
            y.append(speed / speed.max())
            sizes.append(len(recs))
        if not sizes:
            return 0
        self.base = _Booster(self.loss_type, self.num_threads, self.seed).fit(
            np.concatenate(X), np.concatenate(y), sizes)
        self.planned = False
        if len(self.xs) >= self.first_fit and max(self.ys, default=0) > 0:
            self._fit()
        return sum(sizes)
