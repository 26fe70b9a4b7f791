"""Tuples and projections.

    %t = tuple(%a, %b) : tuple<tensor<2xf32>, tensor<3xf32>>
    %b = get_item(%t) {index = 1} : tensor<3xf32>

Ops with several outputs (split, batch_norm) return a tuple; get_item takes
one element out.  Control flow, closures and ADTs join this module later.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import INT
from ....ir.core import Attr
from .base import OpPattern, RelayOp


class TupleOp(RelayOp):
    __slots__ = ()
    name = "relay.tuple"
    OPERANDS = ("*fields",)
    PATTERN = OpPattern.TUPLE

    def type_relation(self, *types):
        return T.TupleType(types)

    def compute(self, *arrays):
        return tuple(arrays)


class TupleGetItemOp(RelayOp):
    __slots__ = ()
    name = "relay.get_item"
    OPERANDS = ("tuple",)
    ATTRS = {"index": Attr(INT)}
    PATTERN = OpPattern.INJECTIVE

    def type_relation(self, t):
        if not isinstance(t, T.TupleType):
            raise self.error(f"expects a tuple, got {t}")
        i = self.attributes["index"]
        if not -len(t.types) <= i < len(t.types):
            raise self.error(f"index {i} is out of range for a tuple of {len(t.types)}")
        return t.types[i]

    def compute(self, t):
        return t[self.attributes["index"]]
