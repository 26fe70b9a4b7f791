"""RandomTuner: configs drawn uniformly without replacement."""

from __future__ import annotations

from .base import Tuner
from .sa import unvisited


class RandomTuner(Tuner):
    def next_batch(self, n: int) -> list[int]:
        out = []
        total = len(self.space)
        while len(out) < n and len(self.visited) < total:
            i = self.rng.randrange(total) if total > 4 * len(self.visited) else self._any_unvisited()
            if i not in self.visited:
                self.visited.add(i)
                out.append(i)
        return out

    def _any_unvisited(self) -> int:
        """When most of the space is visited, draw among what is left."""
        return self.rng.choice(unvisited(len(self.space), self.visited))
