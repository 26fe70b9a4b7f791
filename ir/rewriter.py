"""Rewriting: a Rewriter that keeps use-def chains right, and a greedy
pattern driver.

A pattern matches one op and rewrites through the rewriter::

    class FoldAddZero(RewritePattern):
        ROOT = "relay.add"                       # or None: any op
        def match_and_rewrite(self, op, rw) -> bool:
            if not is_zero(op.operands[1]):
                return False
            rw.replace_op(op, [op.operands[0]])
            return True

``apply_patterns_greedily`` (MLIR's algorithm): put every op on a worklist;
pop one, erase it if it is pure and dead, else fold it, else try the
patterns; after a change, push the users of what changed and the new ops,
until nothing changes or ``max_iterations`` sweeps have run.
"""

from __future__ import annotations

from .core import Operation, Value
from .traits import PURE


class RewritePattern:
    ROOT: str | None = None
    BENEFIT = 1

    def match_and_rewrite(self, op: Operation, rewriter: "Rewriter") -> bool:
        raise NotImplementedError


class Rewriter:
    """Every mutation goes through here so the driver hears about it."""

    def __init__(self, listener=None):
        self.listener = listener
        self.changed = False

    def _notify(self, kind, op):
        self.changed = True
        if self.listener is not None:
            self.listener(kind, op)

    def insert_before(self, anchor: Operation, op: Operation) -> Operation:
        anchor.parent.insert_before(anchor, op)
        self._notify("insert", op)
        return op

    def insert_after(self, anchor: Operation, op: Operation) -> Operation:
        anchor.parent.insert_after(anchor, op)
        self._notify("insert", op)
        return op

    def replace_all_uses(self, old: Value, new: Value):
        for user in old.users:
            self._notify("modify", user)
        old.replace_all_uses_with(new)

    def replace_op(self, op: Operation, new_values):
        """Replace op's results with `new_values` and erase it."""
        new_values = list(new_values)
        if len(new_values) != len(op.results):
            raise ValueError(f"replacing {op.name}: {len(op.results)} results, {len(new_values)} values")
        for r, v in zip(op.results, new_values):
            if v.name is None and r.name is not None:
                v.name = r.name
            self.replace_all_uses(r, v)
        self.erase_op(op)

    def replace_op_with(self, op: Operation, new_op: Operation) -> Operation:
        """Insert `new_op` before `op`, then replace op by its results."""
        if new_op.loc is None or new_op.loc.__class__.__name__ == "UnknownLoc":
            new_op.loc = op.loc
        self.insert_before(op, new_op)
        self.replace_op(op, new_op.results)
        return new_op

    def erase_op(self, op: Operation):
        for v in op.operands:
            d = v.defining_op()
            if d is not None:
                self._notify("operand-dropped", d)
        self._notify("erase", op)
        op.erase()

    def modify(self, op: Operation, fn):
        """Change op in place through `fn(op)`; tells the driver."""
        fn(op)
        self._notify("modify", op)


def fold_op(op: Operation, rewriter: Rewriter, materialize) -> bool:
    """Try op.fold(); constants it returns become ops made by `materialize`
    (value, type, loc) -> Operation, inserted before `op`."""
    folded = op.fold()
    if not folded:
        return False
    if len(folded) != len(op.results):
        return False
    new = []
    for f, r in zip(folded, op.results):
        if isinstance(f, Value):
            if f is r:
                return False
            new.append(f)
        else:
            if op.name.endswith(".constant"):
                return False  # a constant folds to itself
            c = materialize(f, r.type, op.loc)
            if c is None:
                return False
            rewriter.insert_before(op, c)
            new.append(c.results[0])
    rewriter.replace_op(op, new)
    return True


def is_trivially_dead(op: Operation) -> bool:
    return PURE in op.traits and not op.regions and all(not r.uses for r in op.results) and bool(op.results)


def apply_patterns_greedily(root: Operation, patterns, max_iterations: int = 10, materialize=None,
                            fold: bool = True) -> bool:
    """Run `patterns` (and folding) over everything nested in `root` until a
    fixed point.  Returns whether anything changed."""
    by_root: dict = {}
    anywhere = []
    for p in sorted(patterns, key=lambda p: -p.BENEFIT):
        if p.ROOT is None:
            anywhere.append(p)
        else:
            by_root.setdefault(p.ROOT, []).append(p)

    worklist: list[Operation] = []
    on_list: set[int] = set()
    erased: set[int] = set()
    keep_alive: list = []   # erased ops stay referenced so their ids are not reused

    def push(op):
        if id(op) not in on_list and id(op) not in erased:
            on_list.add(id(op))
            worklist.append(op)

    def listener(kind, op):
        if kind == "erase":
            erased.add(id(op))
            keep_alive.append(op)
            return
        push(op)
        if kind in ("insert", "modify"):
            for r in op.results:
                for u in r.uses:
                    push(u)

    rw = Rewriter(listener)
    any_change = False
    for _ in range(max_iterations):
        worklist.clear()
        on_list.clear()
        for op in root.walk(include_self=False):
            push(op)
        worklist.reverse()   # pop() then visits in program order
        changed = False
        while worklist:
            op = worklist.pop()
            on_list.discard(id(op))
            if id(op) in erased or op.parent is None:
                continue
            if is_trivially_dead(op):
                rw.erase_op(op)
                changed = True
                continue
            if fold and materialize is not None and fold_op(op, rw, materialize):
                changed = True
                continue
            for p in by_root.get(op.name, []) + anywhere:
                if p.match_and_rewrite(op, rw):
                    changed = True
                    break
        any_change |= changed
        if not changed:
            break
    return any_change
