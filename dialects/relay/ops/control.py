"""Tuples, projections and ``if``.

    %t = tuple(%a, %b) : tuple<tensor<2xf32>, tensor<3xf32>>
    %b = get_item(%t) {index = 1} : tensor<3xf32>

    %r = if %cond : tensor<4xf32> {          %cond: a scalar boolean, tensor<i1>
      %a = nn.relu(%x) : tensor<4xf32>
      yield %a
    } else {
      yield %x
    }

Ops with several outputs (split, batch_norm) return a tuple; get_item takes
one element out.  ``if`` has two single-block regions, each ending in
``yield`` of one value; the regions see every value of the enclosing scope
(not isolated from above).  Its result type may be left out: it is then the
join of the two branches (``tensor<4xf32>`` and ``tensor<?xf32>`` give
``tensor<?xf32>``; ``tensor<3xf32>`` and ``tensor<4xf32>`` are an error).
A branch may yield a more precise type than the result (``tensor<4xf32>``
into ``tensor<?xf32>``), never a different one.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import INT
from ....ir.core import Attr, Operation
from ....ir.diagnostics import DiagnosticError
from ....ir.traits import PURE, TERMINATOR
from ..types import compatible, join
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


# -- regions that produce a value ---------------------------------------------------

class YieldOp(Operation):
    """``yield %v``: the value of an ``if`` branch or a ``match`` arm;
    ``yield %a, %b, ...``: a ``loop`` step's carried values and outputs."""

    __slots__ = ()
    name = "relay.yield"
    OPERANDS = ("*values",)
    RESULTS = ()
    traits = frozenset({TERMINATOR, PURE})

    def verify_(self):
        parent = self.parent_op
        if parent is None or parent.name not in ("relay.if", "relay.match", "relay.loop"):
            raise self.error("must end an 'if' branch, a 'match' arm or a 'loop' body")

    def print_custom(self, p):
        p.write("yield")
        if self.operands:
            p.write(" " + p.values(self.operands))


def region_terminator(region, want: str):
    """The terminator of a single-block region, or None."""
    if len(region.blocks) != 1:
        return None
    last = region.blocks[0].last
    return last if last is not None and last.name == want else None


def ending(op, region, want: str, single: str, where: str, shown: str):
    """The terminator of `region` of `op`, checked to be a single block (else
    the error `single`) ending in op `want`; else an error at its last op
    saying `where` must end with it, with a note at `op` (`shown`)."""
    if len(region.blocks) != 1:
        raise op.error(single)
    last = region.blocks[0].last
    if last is None or last.name != want:
        loc = last.loc if last is not None else op.loc
        got = f"'{last.name}'" if last is not None else "nothing"
        raise DiagnosticError(loc, f"{where} must end with '{want.split('.')[-1]}', not {got}",
                              [(op.loc, f"the {shown} is here")])
    return last


def branch_yields(op, what: str):
    """The ``yield`` of each region of `op`, each checked to yield one value."""
    out = []
    for r in op.regions:
        last = ending(op, r, "relay.yield", f"each {what} must be a single block", f"a {what} of '{op.name}'",
                      f"'{op.name}'")
        if len(last.operands) != 1:
            raise last.error(f"yields {len(last.operands)} values; a {what} yields exactly one")
        out.append(last)
    return out


def joined_type(op, yields, what: str):
    """The join of the yielded types, ``?`` while one is not known (a call
    of a function defined later); raises at the first yield whose type does
    not join the earlier ones."""
    t = T.incomplete
    first = None
    unknown = False
    for y in yields:
        yt = y.operands[0].type
        if not yt.is_complete:
            unknown = True
            continue
        j = join(t, yt)
        if j is None:
            raise y.error(f"yields {yt}, but an earlier {what} of the '{op.name}' yields {t}",
                          [(first.loc, "the earlier one is here"), (op.loc, f"the '{op.name}' is here")])
        first = first or y
        t = j
    return T.incomplete if unknown else t


def check_yields(op, yields, what: str):
    """Each yield's type must be compatible with `op`'s declared result."""
    rt = op.results[0].type
    for y in yields:
        yt = y.operands[0].type
        if not compatible(yt, rt):
            raise y.error(f"yields {yt}, but the '{op.name}' result is {rt}",
                          [(op.loc, f"the '{op.name}' is here")])


def check_condition(op, t):
    if not t.is_complete:
        return
    if not (isinstance(t, T.TensorType) and t.rank == 0 and t.element_type is T.i1):
        raise op.error(f"condition must be a scalar boolean (tensor<i1>), got {t}")


class IfOp(Operation):
    """``%r = if %c : T { ... yield %a } else { ... yield %b }``."""

    __slots__ = ()
    name = "relay.if"
    OPERANDS = ("cond",)
    RESULTS = ("result",)
    NUM_REGIONS = 2
    traits = frozenset()

    @property
    def then_region(self):
        return self.regions[0]

    @property
    def else_region(self):
        return self.regions[1]

    def infer_types(self):
        return [joined_type(self, branch_yields(self, "branch"), "branch")]

    def verify_(self):
        check_condition(self, self.operands[0].type)
        check_yields(self, branch_yields(self, "branch"), "branch")

    def print_custom(self, p):
        if len(self.regions) != 2 or len(self.operands) != 1 or len(self.results) != 1:
            return p.print_generic(self)
        p.write("if " + p.value(self.operands[0]))
        t = self.results[0].type
        if t.is_complete:
            p.write(" : " + t._text)
        p.write(" ")
        p.print_region(self.regions[0])
        p.write(" else ")
        p.print_region(self.regions[1])
