"""References: Relay's mutable cells.

    %r = ref_create(%v) : !relay.ref<tensor<4xf32>>     a new cell holding %v
    %x = ref_read(%r) : tensor<4xf32>                   what the cell holds now
    %u = ref_write(%r, %w) : tuple<>                    the cell holds %w from here on

They have effects: not pure, so dce keeps a write and cse merges no two
reads (a write between them changes what the second reads), and
fold-constant runs none.  A written value must fit the cell's type both
ways (a cell is read and written).  The relay interpreter runs them (a
cell is a Python object); nothing compiles them, so a model that holds a
reference runs in the interpreter, and the build says so.
"""

from __future__ import annotations

from ....ir import types as T
from ..types import RefType, compatible
from .base import OpPattern, RelayOp


class RefCell:
    """The interpreter's value of a reference."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"ref({self.value!r})"


class _RefOp(RelayOp):
    __slots__ = ()
    PATTERN = OpPattern.OPAQUE
    traits = frozenset()
    STATEFUL = True

    def held_type(self, t):
        if not isinstance(t, RefType):
            raise self.error(f"expects a reference (!relay.ref<...>), got {t}")
        return t.value_type


class RefCreateOp(_RefOp):
    __slots__ = ()
    name = "relay.ref_create"
    OPERANDS = ("value",)

    def type_relation(self, v):
        return RefType(v)

    def compute(self, v):
        return RefCell(v)


class RefReadOp(_RefOp):
    __slots__ = ()
    name = "relay.ref_read"
    OPERANDS = ("ref",)

    def type_relation(self, r):
        return self.held_type(r)

    def compute(self, r):
        return r.value


class RefWriteOp(_RefOp):
    __slots__ = ()
    name = "relay.ref_write"
    OPERANDS = ("ref", "value")

    def type_relation(self, r, v):
        held = self.held_type(r)
        if not (compatible(v, held) and compatible(held, v)):
            raise self.error(f"writes a {v} into a reference to {held}")
        return T.TupleType(())

    def compute(self, r, v):
        r.value = v
        return ()
