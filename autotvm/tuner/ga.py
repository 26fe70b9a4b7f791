"""GATuner: a genetic search over knob values (AutoTVM's GATuner).

A config's genes are its knobs' candidate indices; its fitness is its
throughput (flop / mean cost; 0 when it failed).  Algorithm::

    generation 0: pop_size random unvisited configs
    when a generation is measured, breed the next:
        elites   <- the elite_num fittest configs measured so far
                    (kept as parents; never measured again)
        parents  <- the generation and the elites, drawn with probability
                    proportional to fitness (uniform when all are 0)
        child    <- one-point crossover of two parents' genes, then each
                    gene moved to a random other candidate with
                    probability mutation_prob
        a child already visited or already bred is mutated again (a few
        tries), then replaced by a random unvisited config
    next_batch(n) serves the generation's configs in order.

Near the end of a small space the children are mostly visited ones: the
random fallback then draws from the unvisited configs left, so the tuner
still exhausts the space.
"""

from __future__ import annotations

from .base import Tuner
from .sa import sample_unvisited


class GATuner(Tuner):
    def __init__(self, task, pop_size: int = 100, elite_num: int = 3, mutation_prob: float = 0.1,
                 seed: int = 0):
        super().__init__(task, seed=seed)
        self.pop_size = max(2, min(pop_size, len(self.space)))
        self.elite_num = min(elite_num, self.pop_size)
        self.mutation_prob = mutation_prob
        self.lens = [len(k) for k in self.space.knobs]
        self.radix = [1]
        for n in self.lens[:-1]:
            self.radix.append(self.radix[-1] * n)
        self.fitness: dict[int, float] = {}   # every measured config
        self.generation: list[int] = []       # configs of the generation being measured
        self.queue: list[int] = []            # of those, the ones not yet proposed

    # ---- genes <-> index
    def _genes(self, index):
        return [(index // r) % n for r, n in zip(self.radix, self.lens)]

    def _index(self, genes):
        return sum(g * r for g, r in zip(genes, self.radix))

    # ---- proposing
    def next_batch(self, n: int) -> list[int]:
        out = []
        while len(out) < n and len(self.visited) < len(self.space):
            if not self.queue:
                self._breed()
            i = self.queue.pop(0)
            if i in self.visited:
                continue
            self.visited.add(i)
            out.append(i)
        return out

    def update(self, indices, records) -> None:
        for i, r in zip(indices, records):
            self.fitness[i] = (self.task.flop or 1) / r.mean_cost if r.ok and r.mean_cost > 0 else 0.0

    def _breed(self):
        total = len(self.space)
        parents = [i for i in dict.fromkeys(self.generation) if i in self.fitness]
        elites = sorted(self.fitness, key=lambda i: (-self.fitness[i], i))[:self.elite_num]
        parents = list(dict.fromkeys(parents + elites))
        if len(parents) < 2:   # nothing measured yet: generation 0
            self.generation = sample_unvisited(self.rng, total, self.visited, self.pop_size)
            self.queue = list(self.generation)
            return
        weights = [self.fitness[i] for i in parents]
        if sum(weights) <= 0:
            weights = [1.0] * len(parents)
        children: list[int] = []
        bred = set()
        for _ in range(self.pop_size - len(elites)):
            a, b = self.rng.choices(parents, weights, k=2)
            ga, gb = self._genes(a), self._genes(b)
            cut = self.rng.randrange(1, len(ga)) if len(ga) > 1 else 0
            genes = ga[:cut] + gb[cut:]
            child = None
            for _try in range(4):
                genes = self._mutate(genes, force=_try > 0)
                c = self._index(genes)
                if c not in self.visited and c not in bred:
                    child = c
                    break
            if child is None:
                pick = sample_unvisited(self.rng, total, self.visited, 1, exclude=bred)
                if not pick:
                    break
                child = pick[0]
            bred.add(child)
            children.append(child)
        if not children:   # only reachable when bred covers all that is left
            children = sample_unvisited(self.rng, total, self.visited, self.pop_size)
        self.generation = elites + children
        self.queue = list(children)

    def _mutate(self, genes, force=False):
        """Each gene to a random other candidate with mutation_prob (at
        least one gene when `force`: the child was a visited config)."""
        genes = list(genes)
        movable = [j for j, n in enumerate(self.lens) if n > 1]
        forced = self.rng.choice(movable) if force and movable else None
        for j in movable:
            if j == forced or self.rng.random() < self.mutation_prob:
                genes[j] = (genes[j] + 1 + self.rng.randrange(self.lens[j] - 1)) % self.lens[j]
        return genes

