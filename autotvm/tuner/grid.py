"""GridSearchTuner: every config in index order (the first knob fastest)."""

from __future__ import annotations

from .base import Tuner


class GridSearchTuner(Tuner):
    def __init__(self, task, **kwargs):
        super().__init__(task, **kwargs)
        self.cursor = 0

    def next_batch(self, n: int) -> list[int]:
        out = []
        while len(out) < n and self.cursor < len(self.space):
            if self.cursor not in self.visited:
                self.visited.add(self.cursor)
                out.append(self.cursor)
            self.cursor += 1
        return out
