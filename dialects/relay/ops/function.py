"""Functions, calls, returns and constants.

    relay.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {primitive} {
      %c = constant dense<1.0> : tensor<4xf32>
      %0 = add(%x, %c) : tensor<1x4xf32>
      %1 = call @helper(%0) : tensor<1x4xf32>
      return %1
    }

A function marked ``primitive`` is a fused group, one kernel to be
(FuseOps makes them; ``--lower-relay-to-te`` lowers them).
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import DENSE, SYMBOL, TYPE
from ....ir.attrkinds import STR as STR_KIND
from ....ir.core import Attr, Operation
from ....ir.func_like import print_func_like, verify_func_like
from ....ir.printer import print_symbol
from ....ir.symbols import lookup_symbol
from ....ir.traits import ISOLATED_FROM_ABOVE, PURE, SYMBOL as SYMBOL_TRAIT, TERMINATOR
from ..types import compatible
from .base import OpPattern, RelayOp

class FuncOp(Operation):
    __slots__ = ()
    name = "relay.func"
    OPERANDS = ()
    RESULTS = ()
    NUM_REGIONS = 1
    ATTRS = {"sym_name": Attr(STR_KIND), "function_type": Attr(TYPE)}
    traits = frozenset({ISOLATED_FROM_ABOVE, SYMBOL_TRAIT})

    @property
    def function_type(self) -> T.FunctionType:
        return self.attributes["function_type"]

    @property
    def is_primitive(self) -> bool:
        return "primitive" in self.attributes

    @property
    def return_op(self):
        return self.body.last

    def verify_(self):
        verify_func_like(self, "relay.return")

    def print_custom(self, p):
        print_func_like(self, p, "relay.func")


class ReturnOp(Operation):
    __slots__ = ()
    name = "relay.return"
    OPERANDS = ("*values",)
    RESULTS = ()
    traits = frozenset({TERMINATOR, PURE})

    def print_custom(self, p):
        p.write("return")
        if self.operands:
            p.write(" " + p.values(self.operands))


# Ops that can be the target of a relay.call: anything with a function_type.
def callee_type(callee_op):
    """The signature a call sees: a relay/te function's type, or a lower-level
    kernel's tensor view of itself (``tensor_signature``)."""
    sig = getattr(callee_op, "tensor_signature", None)
    ft = sig() if sig is not None else callee_op.attributes.get("function_type")
    if not isinstance(ft, T.FunctionType):
        return None
    if len(ft.results) > 1:
        # a kernel returns a tuple's fields (split, topk): the call's one value is that tuple
        return T.FunctionType(ft.inputs, [T.TupleType(ft.results)])
    return ft


class CallOp(RelayOp):
    """Call a function by symbol: a relay.func, or the te/tir kernel it became."""

    __slots__ = ()
    name = "relay.call"
    OPERANDS = ("*args",)
    ATTRS = {"callee": Attr(SYMBOL)}
    PATTERN = OpPattern.OPAQUE
    traits = frozenset()

    @property
    def callee(self) -> str:
        return self.attributes["callee"].name

    def resolve(self):
        return lookup_symbol(self, self.callee)

    def infer_types(self):
        f = self.resolve() if self.parent is not None else None
        ft = callee_type(f) if f is not None else None
        if ft is None:
            return [T.incomplete]
        return list(ft.results) if ft.results else [T.incomplete]

    def verify_(self):
        f = self.resolve()
        if f is None:
            raise self.error(f"'@{self.callee}' does not reference a function in this module")
        ft = callee_type(f)
        if ft is None:
            raise self.error(f"'@{self.callee}' is a '{f.name}', not a function")
        args = [v.type for v in self.operands]
        if len(args) != len(ft.inputs):
            raise self.error(f"passes {len(args)} argument(s) but @{self.callee} takes {len(ft.inputs)}",
                             notes=[(f.loc, "callee defined here")])
        for i, (a, w) in enumerate(zip(args, ft.inputs)):
            if not compatible(a, w):   # a parameter may leave dimensions dynamic
                raise self.error(f"argument {i} has type {a} but @{self.callee} expects {w}",
                                 notes=[(f.loc, "callee defined here")])
        r = self.results[0].type
        if r.is_complete and ft.results and ft.results[0].is_complete and r is not ft.results[0]:
            raise self.error(f"result type {r} does not match @{self.callee}'s result type {ft.results[0]}")

    def print_custom(self, p):
        p.write(f"call {print_symbol(self.callee)}({p.values(self.operands)})")
        t = self.results[0].type
        if t.is_complete:
            p.write(f" : {t}")


class ConstantOp(RelayOp):
    __slots__ = ()
    name = "relay.constant"
    OPERANDS = ()
    ATTRS = {"value": Attr(DENSE)}
    PATTERN = OpPattern.OPAQUE

    @classmethod
    def get(cls, array, type=None, key=None, loc=None):
        from ....ir.attributes import DenseAttr
        from ....ir.location import UNKNOWN
        attr = array if isinstance(array, DenseAttr) else DenseAttr(array, type, key)
        return cls((), (attr.type,), {"value": attr}, (), loc or UNKNOWN)

    @property
    def value(self):
        return self.attributes["value"]

    def infer_types(self):
        return [self.attributes["value"].type]

    def type_relation(self):
        return self.attributes["value"].type

    def verify_(self):
        # literal ranges (issue 9): the shape must fit i64 and the element
        # type have a storage type; dense_from_literal range-checks elements
        from ....ir import types as T
        t = self.attributes["value"].type
        n = t.num_elements()
        if n is None or n > T.MAX_ELEMENTS:
            raise self.error(f"constant of type {t}: {'dynamic shape' if n is None else 'more elements than fit in i64'}")
        super().verify_()

    def compute(self):
        return self.attributes["value"].array

    def fold(self):
        return [self.attributes["value"]]

    def print_custom(self, p):
        p.write("constant " + p.attr(self.attributes["value"]))
