"""Builder: create ops at an insertion point.

    b = Builder.at_end(block)            # or Builder.before(op) / Builder.after(op)
    y = b.create(ReluOp, x)              # result types from the op's infer_types
    z = b.insert(SomeOp([a, b], [t]))    # an op built by hand
"""

from __future__ import annotations

from .core import Block, Operation
from .location import UNKNOWN


class Builder:
    __slots__ = ("block", "anchor", "loc")

    def __init__(self, block: Block | None = None, anchor: Operation | None = None, loc=UNKNOWN):
        self.block = block      # insert into this block ...
        self.anchor = anchor    # ... before this op (None: at the end)
        self.loc = loc

    @classmethod
    def at_end(cls, block, loc=UNKNOWN):
        return cls(block, None, loc)

    @classmethod
    def before(cls, op, loc=None):
        return cls(op.parent, op, op.loc if loc is None else loc)

    @classmethod
    def after(cls, op, loc=None):
        return cls(op.parent, op.next, op.loc if loc is None else loc)

    def insert(self, op: Operation) -> Operation:
        if op.loc is UNKNOWN and self.loc is not UNKNOWN:
            op.loc = self.loc
        if self.anchor is None:
            self.block.append(op)
        else:
            self.block.insert_before(self.anchor, op)
        return op

    def create(self, cls, *operands, result_types=None, regions=(), name=None, **attributes):
        """Build and insert an op; returns its single result, or the op when
        it has none or several.  `name` becomes the result's name hint."""
        if result_types is None:
            op = cls.build(*operands, loc=self.loc, regions=regions, **attributes)
        else:
            op = cls(operands, result_types, attributes, regions, self.loc)
        self.insert(op)
        if len(op.results) == 1:
            if name is not None:
                op.results[0].name = name
            return op.results[0]
        return op
