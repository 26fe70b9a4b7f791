"""Static memory planning for the intermediate buffers of a straight-line body.

The executor describes the entry function as steps, in order; each step
defines zero or more buffers (the outputs a compiled kernel writes, sized
from their static types) and reads values.  A value may view several
buffers: a kernel's result views the buffers it defined; an interpreted
op's result (numpy reshape, a tuple, a tuple item) may view anything its
operands view, so it is taken to view all of them.

Algorithm (linear scan with best fit):

1. alias sets: ``views[value] = union(views[operand])`` for interpreted
   steps, the fresh buffer ids for a kernel's outputs;
2. ``last_use[b]`` = the last step reading any value that views `b`;
   a buffer that nothing reads dies right after the step defining it;
3. a buffer that a returned value views *escapes*: it is not planned, the
   executor allocates it fresh on each run, so the caller owns its outputs;
4. walk the steps: first give each buffer the step defines the smallest
   free block of at least its size (a new block when none fits), then
   return to the free list the blocks whose buffer's last use is this step.
   Allocating before freeing keeps a kernel's outputs off its own inputs
   (compiled kernels assume their buffers do not alias).

The blocks are allocated once per executor (64-byte aligned); a buffer is a
typed view of the start of its block.
"""

from __future__ import annotations

import bisect

from .ndarray import ALIGN


class Plan:
    """``block_of[buffer] -> block index`` (None: escapes, fresh per run);
    ``block_sizes``; ``planned_bytes`` (sum of the blocks) and
    ``unplanned_bytes`` (every intermediate buffer allocated on its own)."""

    def __init__(self, block_of, block_sizes, unplanned_bytes, escaping, views):
        self.views = views    # value -> the buffer ids (and seeded ids) it may view
        self.block_of = block_of
        self.block_sizes = block_sizes
        self.unplanned_bytes = unplanned_bytes
        self.escaping = escaping

    @property
    def planned_bytes(self):
        return sum(self.block_sizes)

    def summary(self):
        n = sum(1 for b in self.block_of.values() if b is not None)
        return (f"{n} intermediate buffer(s) in {len(self.block_sizes)} block(s): {self.planned_bytes} bytes "
                f"planned vs {self.unplanned_bytes} unplanned; {len(self.escaping)} output buffer(s) fresh per run")


def _round(n):
    return max(ALIGN, (n + ALIGN - 1) // ALIGN * ALIGN)


def plan_memory(steps, returned, seed_views=None):
    """Plan buffers for `steps`, a list of ``(defines, reads, result, kind)``:
    `defines` is ``[(buffer id, nbytes)]``, `reads` the values read, `result`
    the value the step makes (None for none) and `kind` "kernel" (the result
    views exactly `defines`), "owned" (it views what `seed_views` says: a
    loop's own arrays) or anything else (it may view its reads).
    `returned` lists the values the function returns; `seed_views` gives
    the views of values no step makes (inputs, constants: ids that are not
    buffers, so the executor can tell what a returned value may view)."""
    views: dict = dict(seed_views or {})
    size: dict = {}
    def_step: dict = {}
    for i, (defines, reads, result, kind) in enumerate(steps):
        for b, n in defines:
            size[b] = n
            def_step[b] = i
        if result is None:
            continue
        if kind == "kernel":
            views[result] = frozenset(b for b, _ in defines)
        elif kind == "owned":
            pass   # arrays of the step's own (a loop's): the seed says what it views
        else:
            s = set()
            for v in reads:
                s |= views.get(v, frozenset())
            views[result] = frozenset(s)
    last_use = dict(def_step)
    for i, (_, reads, _, _) in enumerate(steps):
        for v in reads:
            for b in views.get(v, ()):
                if b in last_use:
                    last_use[b] = max(last_use[b], i)
    escaping = set()
    for v in returned:
        escaping |= views.get(v, frozenset())
    dying: dict = {}
    for b, i in last_use.items():
        dying.setdefault(i, []).append(b)
    block_of, block_sizes = {}, []
    free: list = []   # sorted (size, block index)
    for i, (defines, _, _, _) in enumerate(steps):
        for b, n in defines:
            if b in escaping:
                block_of[b] = None
                continue
            need = _round(n)
            k = bisect.bisect_left(free, (need, -1))
            if k < len(free):
                _, blk = free.pop(k)
            else:
                blk = len(block_sizes)
                block_sizes.append(need)
            block_of[b] = blk
        for b in dying.get(i, ()):
            blk = block_of.get(b)
            if blk is not None:
                bisect.insort(free, (block_sizes[blk], blk))
    unplanned = sum(_round(n) for b, n in size.items() if b not in escaping)
    return Plan(block_of, block_sizes, unplanned, escaping & set(size), views)
