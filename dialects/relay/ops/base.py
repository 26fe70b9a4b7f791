"""The base of every relay operator.

A relay op declares, as data on its class:

* ``PATTERN``: its fusion pattern kind (TVM's ``TOpPattern``), which FuseOps reads;
* ``type_relation(*operand_types)``: the result type, or ``self.error(...)``;
* ``compute(*arrays)``: its meaning, on numpy arrays (the reference interpreter);
* ``ATTRS``: attributes with TVM's names and defaults.

Custom form: ``%r = nn.conv2d(%x, %w) {strides = [2, 2]} : tensor<...>``.
Only attributes that differ from their defaults are printed, as in TVM; the
result type is optional on input and inferred when left out.
"""

from __future__ import annotations

from enum import IntEnum

from ....ir import types as T
from ....ir.core import REQUIRED, Operation
from ....ir.traits import PURE


class OpPattern(IntEnum):
    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


RELAY_PREFIX = "relay."


class RelayOp(Operation):
    __slots__ = ()
    traits = frozenset({PURE})
    RESULTS = ("result",)
    PATTERN = OpPattern.OPAQUE

    # -- layout behaviour, for --convert-layout (TVM's FInferCorrectLayout) --
    # LAYOUT says what the op does when its data input arrives in another
    # layout than the one it was written for:
    #   "elemwise"   works in any layout; the output has the input's layout
    #                (relu, exp, cast, clip, ...)
    #   "broadcast"  like elemwise, but every tensor operand must be in that
    #                layout: a same-rank operand gets a layout_transform, a
    #                lower-rank or one-element operand is re-laid out
    #   "axis"       has integer axis attributes (AXIS_ATTRS, an int or a list)
    #                that are renumbered for a permuted layout (softmax, sum,
    #                concatenate, bias_add ...); per-axis list attributes are
    #                permuted by overriding relayout()
    #   "layout"     takes its layouts as string attributes (LAYOUT_ATTRS, e.g.
    #                data_layout) and can be rewritten to run in another layout
    #                (conv2d, max_pool2d, resize2d ...)
    #   "opaque"     needs its original layout (reshape, dense, ...): a
    #                transform back is inserted before it
    LAYOUT = "opaque"
    AXIS_ATTRS: tuple = ()
    LAYOUT_ATTRS: tuple = ()

    def relayout(self, perm):
        """Attributes for running on input permuted by `perm` (new axis i is
        old axis perm[i]), or None when the op cannot.  The default renumbers
        AXIS_ATTRS; ops with per-axis lists override it."""
        if self.LAYOUT not in ("axis", "elemwise", "broadcast"):
            return None
        inv = {old: new for new, old in enumerate(perm)}
        rank = len(perm)
        out = {}
        for name in self.AXIS_ATTRS:
            v = self.attributes.get(name)
            if v is None:
                continue
            if isinstance(v, tuple):
                out[name] = tuple(inv[a % rank] for a in v)
            else:
                out[name] = inv[v % rank]
        return out

    @property
    def op_name(self) -> str:
        """The name as TVM spells it: ``nn.conv2d``."""
        return self.name[len(RELAY_PREFIX):]

    # -- types ----------------------------------------------------------------

    def type_relation(self, *types):
        raise self.error("has no type relation")

    def check_operand_count(self):
        """Reject a wrong number of operands (the names declared in OPERANDS;
        a ``*name`` tail is variadic) before any type relation sees them."""
        names = type(self).OPERANDS
        if names is None:
            return
        n = len(self.operands)
        fixed = [x for x in names if not x.startswith("*")]
        listed = ", ".join(x.lstrip("*") + ("..." if x.startswith("*") else "") for x in names)
        if names and names[-1].startswith("*"):
            need = max(len(fixed), self.MIN_OPERANDS)
            if n < need:
                raise self.error(f"expects at least {need} operand{'s' if need != 1 else ''} "
                                 f"({listed}), got {n}")
        elif n != len(names):
            what = f" ({listed})" if names else ""
            raise self.error(f"expects {len(names)} operand{'s' if len(names) != 1 else ''}{what}, got {n}")

    # the fewest operands a variadic op (OPERANDS ending in ``*name``) takes
    MIN_OPERANDS = 0

    def check_attrs(self):
        """Attribute values the type relation needs in range (finite, positive,
        ...); ops override and raise ``self.error``.  Runs before the relation."""

    def check_int_ranges(self):
        """Every integer in an attribute fits an i64: lowering turns strides,
        axes, sizes and shapes into index constants."""
        def ints(v):
            if isinstance(v, tuple):
                for x in v:
                    yield from ints(x)
            elif type(v) is int:
                yield v
        for k, v in self.attributes.items():
            for x in ints(v):
                if msg := T.index_error(x, f"attribute '{k}': value"):
                    raise self.error(msg)

    def verify(self):
        self.check_operand_count()
        super().verify()

    def _relation(self, types):
        self.check_operand_count()
        self.check_int_ranges()
        self.check_attrs()
        try:
            return self.type_relation(*types)
        except (ArithmeticError, ValueError, TypeError, IndexError, KeyError) as e:
            # a safety net: an attribute value no check above caught must still
            # be reported at the op, never as a crash of the compiler
            raise self.error(f"invalid operands or attributes: {e}") from None

    def infer_types(self):
        types = [v.type for v in self.operands]
        if not all(t.is_complete for t in types):
            self.check_operand_count()
            return [T.incomplete]
        return [self._relation(types)]

    def verify_(self):
        types = [v.type for v in self.operands]
        r = self.results[0].type if self.results else None
        if r is None or not all(t.is_complete for t in types):
            return
        want = self._relation(types)
        if r.is_complete and want is not r:
            raise self.error(f"result type {r} does not match the inferred type {want}")

    # -- meaning --------------------------------------------------------------

    def compute(self, *args):
        raise NotImplementedError(f"{self.name} has no reference implementation")

    # -- text -------------------------------------------------------------------

    def non_default_attrs(self):
        out = {}
        spec = self.ATTRS
        for k, v in self.attributes.items():
            a = spec.get(k)
            if v is None or (a is not None and a.default is not REQUIRED and a.default == v
                             and type(a.default) is type(v)):
                continue
            out[k] = v
        return out

    def print_custom(self, p):
        w = p.out.append
        w(self.op_name)
        w("(")
        w(p.values(self.operands))
        w(")")
        p.opt_attr_dict(self.non_default_attrs())
        t = self.results[0].type
        if t.is_complete:
            w(" : ")
            w(t._text)


# -- shared type-relation helpers ---------------------------------------------

def tensor_type(op, t, what="operand"):
    if not isinstance(t, T.TensorType):
        raise op.error(f"expects a tensor {what}, got {t}")
    return t


def broadcast_shapes(op, a, b):
    """numpy broadcasting; a dynamic dimension (None) broadcasts like TVM's Any."""
    ra, rb = len(a), len(b)
    out = []
    for i in range(max(ra, rb)):
        da = a[ra - 1 - i] if i < ra else 1
        db = b[rb - 1 - i] if i < rb else 1
        if da == db:
            out.append(da)
        elif da == 1:
            out.append(db)
        elif db == 1:
            out.append(da)
        elif da is None:
            out.append(db)
        elif db is None:
            out.append(da)
        else:
            raise op.error(f"shapes {_shape_text(a)} and {_shape_text(b)} cannot be broadcast together")
    return tuple(reversed(out))


def _shape_text(s):
    return "[" + ", ".join("?" if d is None else str(d) for d in s) + "]"


def same_dtype(op, *types):
    e = types[0].element_type
    for t in types[1:]:
        if t.element_type is not e:
            raise op.error(f"operand element types differ: {e} and {t.element_type}")
    return e


def finite(op, name, lo=None, positive=False):
    """The float attribute `name`, checked finite (and > 0 / >= lo)."""
    import math
    v = op.attributes.get(name)
    if v is None:
        return v
    if not math.isfinite(v):
        raise op.error(f"attribute '{name}' must be finite, got {v}")
    if positive and not v > 0:
        raise op.error(f"attribute '{name}' must be positive, got {v}")
    if lo is not None and v < lo:
        raise op.error(f"attribute '{name}' must be at least {lo}, got {v}")
    return v


def ints_at_least(op, name, lo, values=None):
    """Every integer of attribute `name` (an int or a tuple) is >= lo."""
    v = op.attributes.get(name) if values is None else values
    if v is None:
        return v
    for x in (v if isinstance(v, tuple) else (v,)):
        if type(x) is int and x < lo:
            what = "positive" if lo == 1 else "non-negative" if lo == 0 else f"at least {lo}"
            raise op.error(f"attribute '{name}' must be {what}, got {x}")
    return v


# the largest dimension a shape computation may produce, and the largest rank
MAX_DIM = 1 << 62
MAX_RANK = 1 << 16


def out_dtype(op, default):
    od = op.attributes.get("out_dtype", "")
    return T.from_dtype_name(od) if od else default
