"""Closures and calls of function values.

    %f = fn (%y: tensor<4xf32>) -> tensor<4xf32> {      a closure: may use %x from outside
      %v = add(%x, %y) : tensor<4xf32>
      return %v
    }
    %r = call %f(%a) : tensor<4xf32>                    call a function value
    %g = constant @helper : (tensor<4xf32>) -> tensor<4xf32>   a global function as a value

``fn`` is Relay's closure: its region is *not* isolated from above, so its
body may use any value of the enclosing scopes, and the value it makes
captures them.  Its result type is the function type ``(params) -> result``;
``-> result`` may be left out, and is then the returned value's type.
``call %f(...)`` (``relay.call_indirect``, MLIR's name) calls any value of
function type: a closure, a function parameter, ``constant @f``.  A local
closure cannot call itself (its name is defined after its body); recursion
goes through global functions.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import SYMBOL
from ....ir.core import Attr, Operation
from ....ir.printer import print_symbol
from ....ir.symbols import lookup_symbol
from ....ir.traits import PURE
from ..types import compatible


class FnOp(Operation):
    """``%f = fn (%p: T, ...) -> R { ... return %v }``: a closure."""

    __slots__ = ()
    name = "relay.fn"
    OPERANDS = ()
    RESULTS = ("result",)
    NUM_REGIONS = 1
    traits = frozenset()

    @property
    def function_type(self) -> T.FunctionType:
        return self.results[0].type

    @property
    def params(self):
        return self.regions[0].blocks[0].args

    def return_op(self):
        """The body's ``return``, checked to return one value."""
        from .control import ending
        ret = ending(self, self.regions[0], "relay.return", "body must be a single block",
                     "the body of a 'fn'", "'fn'")
        if len(ret.operands) != 1:
            raise ret.error(f"returns {len(ret.operands)} values; a 'fn' returns exactly one")
        return ret

    def infer_types(self):
        ret = self.return_op()
        return [T.FunctionType([a.type for a in self.params], [ret.operands[0].type])]

    def verify_(self):
        ft = self.results[0].type
        if not isinstance(ft, T.FunctionType) or len(ft.results) != 1:
            raise self.error(f"result must be a function type with one result, got {ft}")
        argt = tuple(a.type for a in self.params)
        if argt != ft.inputs:
            raise self.error(f"parameters ({', '.join(map(str, argt))}) do not match the function type {ft}")
        ret = self.return_op()
        rt = ret.operands[0].type
        if not compatible(rt, ft.results[0]):
            raise ret.error(f"returns {rt}, but the 'fn' result is {ft.results[0]}",
                            [(self.loc, "the 'fn' is here")])

    def print_custom(self, p):
        ft = self.results[0].type if len(self.results) == 1 else None
        if (not isinstance(ft, T.FunctionType) or len(ft.results) != 1 or len(self.regions) != 1
                or len(self.regions[0].blocks) != 1):
            return p.print_generic(self)
        p.write("fn (")
        # the parameters belong to the body's scope: a sibling may reuse the names
        p.push_scope(isolated=False)
        p.write(", ".join(f"{p.define(a)}: {a.type._text}" for a in self.params))
        p.write(")")
        if ft.results[0].is_complete:
            p.write(" -> " + ft.results[0]._text)
        if self.attributes:
            p.write(" attributes " + p.attr_dict(self.attributes))
        p.write(" ")
        p.print_region(self.regions[0])
        p.pop_scope()


def _callee_signature(op, t):
    if not isinstance(t, T.FunctionType):
        raise op.error(f"calls a value of type {t}, which is not a function")
    if len(t.results) != 1:
        raise op.error(f"calls a function with {len(t.results)} results; relay functions return one value")
    return t


class CallIndirectOp(Operation):
    """``%r = call %f(%a, ...) : T``: call a function value."""

    __slots__ = ()
    name = "relay.call_indirect"
    OPERANDS = ("callee", "*args")
    RESULTS = ("result",)
    # not pure: the closure called may write a reference (ops/ref.py), and
    # which closure a value holds is not known where it is called
    traits = frozenset()

    def infer_types(self):
        t = self.operands[0].type
        if not t.is_complete and not isinstance(t, T.FunctionType):
            return [T.incomplete]
        return [_callee_signature(self, t).results[0]]

    def verify_(self):
        t = self.operands[0].type
        if t is T.incomplete:
            return
        ft = _callee_signature(self, t)
        args = self.operands[1:]
        if len(args) != len(ft.inputs):
            raise self.error(f"passes {len(args)} argument(s) to a function of type {ft}, "
                             f"which takes {len(ft.inputs)}")
        for i, (a, w) in enumerate(zip(args, ft.inputs)):
            if not compatible(a.type, w):
                raise self.error(f"argument {i} has type {a.type} but the function takes {w}")
        r = self.results[0].type
        if not compatible(ft.results[0], r):
            raise self.error(f"result type {r} does not match the function's result type {ft.results[0]}")

    def print_custom(self, p):
        if not self.operands or len(self.results) != 1:
            return p.print_generic(self)
        p.write(f"call {p.value(self.operands[0])}({p.values(self.operands[1:])})")
        t = self.results[0].type
        if t.is_complete:
            p.write(" : " + t._text)


class FuncRefOp(Operation):
    """``%g = constant @f : (T) -> R``: a global relay function as a value."""

    __slots__ = ()
    name = "relay.func_ref"
    OPERANDS = ()
    RESULTS = ("result",)
    ATTRS = {"callee": Attr(SYMBOL)}
    traits = frozenset({PURE})

    @property
    def callee(self) -> str:
        return self.attributes["callee"].name

    def resolve(self):
        f = lookup_symbol(self, self.callee)
        if f is None:
            raise self.error(f"'@{self.callee}' does not reference a function in this module")
        if f.name != "relay.func":
            raise self.error(f"'@{self.callee}' is a '{f.name}'; only a relay.func can be a value")
        return f

    def infer_types(self):
        return [self.resolve().attributes["function_type"]]

    def verify_(self):
        ft = self.resolve().attributes["function_type"]
        r = self.results[0].type
        if r.is_complete and ft.is_complete and r is not ft:
            raise self.error(f"has type {r} but @{self.callee} is {ft}")

    def print_custom(self, p):
        p.write("constant " + print_symbol(self.callee))
        t = self.results[0].type
        if t.is_complete:
            p.write(" : " + t._text)

