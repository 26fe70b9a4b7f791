"""Simulated annealing over a config space, maximising a model's score.

Points are config indices, kept as digits (each knob's candidate index).
Algorithm of :func:`anneal`::

    points  <- `parallel` starting indices (the previous call's last points
               when given: chains persist between plans, as AutoTVM's did)
    top     <- the best `k` unvisited points seen so far, by score
    for step in 0 .. n_iter-1:
        T      <- temp[0] + (temp[1] - temp[0]) * step / n_iter   (linear cooling)
        new    <- each point with one random knob moved to another candidate
        accept a move with probability min(1, exp((s_new - s_old) / (T * scale)))
               (scale: the spread of the first scores, so T is unit-free)
        add the unvisited new points to top
        stop early when top has not changed for `early_stop` steps

All chains move at once: one model call scores every chain's proposal.
The walk may pass through visited configs (they are often next to good
ones) but never returns them.

Also here: :func:`sample_unvisited`, random configs without replacement,
shared by the tuners that fall back to random, and :func:`unvisited`.
"""

from __future__ import annotations

import heapq

import numpy as np


def unvisited(total: int, visited, exclude=()) -> list[int]:
    """Every index in [0, total) outside `visited` and `exclude`, in order
    (for a space that is mostly visited: walking it beats drawing)."""
    return [i for i in range(total) if i not in visited and i not in exclude]


def sample_unvisited(rng, total: int, visited, n: int, exclude=()) -> list[int]:
    """Up to `n` distinct random indices in [0, total) outside `visited`
    and `exclude`; draws by rejection while most of the space is free,
    else from the list of what is left."""
    out, taken = [], set(exclude)
    free = total - len(visited) - len(taken - set(visited))
    if free <= 0:
        return out
    if total > 4 * (len(visited) + len(taken)) and total > 64:
        while len(out) < min(n, free):
            i = rng.randrange(total)
            if i not in visited and i not in taken:
                taken.add(i)
                out.append(i)
        return out
    left = unvisited(total, visited, taken)
    rng.shuffle(left)
    return left[:n]


def anneal(score, lens, visited, k: int, nprng, start=None, parallel: int = 128, n_iter: int = 500,
           temp=(1.0, 0.0), early_stop: int = 50, exclude=()):
    """The top `k` unvisited indices by `score` (a function of an int64 index
    array returning scores), best first, and the chains' last points.

    `lens` are the knobs' candidate counts (first knob fastest)."""
    lens = np.asarray(lens, dtype=np.int64)
    radix = np.cumprod(np.concatenate([[1], lens[:-1]])).astype(np.int64)
    total = int(np.prod(lens))
    parallel = max(1, min(parallel, total))
    if start is not None and len(start):
        pts = np.asarray(start, dtype=np.int64)[:parallel]
        if len(pts) < parallel:
            pts = np.concatenate([pts, nprng.integers(0, total, parallel - len(pts))])
    else:
        pts = nprng.integers(0, total, parallel)
    blocked = set(visited) | set(exclude)
    scores = np.asarray(score(pts), dtype=float)
    heap, in_heap = [], set()     # min-heap of (score, index): the top k

    def offer(idx, sc):
        changed = False
        for i, s in zip(idx.tolist(), sc.tolist()):
            if i in blocked or i in in_heap:
                continue
            if len(heap) < k:
                heapq.heappush(heap, (s, i))
            elif s > heap[0][0]:
                in_heap.discard(heapq.heappushpop(heap, (s, i))[1])
            else:
                continue
            in_heap.add(i)
            changed = True
        return changed

    offer(pts, scores)
    scale = float(np.std(scores)) or 1.0
    movable = np.flatnonzero(lens > 1)
    if len(movable) == 0:
        return [i for _, i in sorted(heap, reverse=True)], pts
    quiet = 0
    for step in range(n_iter):
        t = temp[0] + (temp[1] - temp[0]) * step / n_iter
        d = (pts[:, None] // radix[None, :]) % lens[None, :]
        knob = movable[nprng.integers(0, len(movable), len(pts))]
        cur = d[np.arange(len(pts)), knob]
        # another candidate of that knob, uniformly among the len-1 others
        new = (cur + 1 + nprng.integers(0, lens[knob] - 1)) % lens[knob]
        cand = pts + (new - cur) * radix[knob]
        cs = np.asarray(score(cand), dtype=float)
        if t > 0:
            p = np.exp(np.minimum((cs - scores) / (t * scale), 0.0))
            accept = nprng.random(len(pts)) < p
        else:
            accept = cs >= scores
        pts = np.where(accept, cand, pts)
        scores = np.where(accept, cs, scores)
        quiet = 0 if offer(cand, cs) else quiet + 1
        if quiet >= early_stop:
            break
    return [i for _, i in sorted(heap, reverse=True)], pts
