"""Attribute kinds for op declarations: a check and a normaliser each.

``ATTRS = {"strides": Attr(INTS, (1, 1)), "layout": Attr(enum("NCHW", "NHWC"), "NCHW")}``
"""

from __future__ import annotations

from .attributes import UNIT, DenseAttr, DialectAttr, SymbolRef
from .core import AttrKind
from .types import Type


def _is_int(v):
    return type(v) is int


def _is_num(v):
    return type(v) in (int, float)


def _tuple(v):
    return tuple(v) if isinstance(v, list) else v


def _float(v):
    return float(v) if type(v) is int else v


def _knob_or(check):
    """Allow a tuning knob (``#tune.knob<...>``) wherever a value is expected:
    AutoTVM templates put knobs in place of the numbers the tuner picks."""
    def f(v):
        if isinstance(v, DialectAttr) and v.name.startswith("tune."):
            return None
        return check(v)
    return f


INT = AttrKind("integer", _knob_or(lambda v: None if _is_int(v) else "must be an integer"))
FLOAT = AttrKind("float", lambda v: None if _is_num(v) else "must be a number", _float)
BOOL = AttrKind("bool", lambda v: None if type(v) is bool else "must be true or false")
STR = AttrKind("string", lambda v: None if type(v) is str else "must be a string")
TYPE = AttrKind("type", lambda v: None if isinstance(v, Type) else "must be a type")
SYMBOL = AttrKind("symbol", lambda v: None if isinstance(v, SymbolRef) else "must be a symbol reference (@name)")
DENSE = AttrKind("dense", lambda v: None if isinstance(v, DenseAttr) else "must be a dense constant")
FLAG = AttrKind("unit", lambda v: None if v is UNIT else "must be a unit flag")
ANY = AttrKind("any", lambda v: None)


def _list_of(pred, what, n=None):
    def check(v):
        if not isinstance(v, tuple) or not all(pred(x) for x in v):
            return f"must be an array of {what}"
        if n is not None and len(v) not in n:
            return f"must have {' or '.join(map(str, n))} elements, got {len(v)}"
        return None
    return check


def ints(*lengths) -> AttrKind:
    """An array of integers, optionally of one of the given lengths."""
    return AttrKind("integer array", _knob_or(_list_of(_is_int, "integers", lengths or None)), _tuple)


INTS = ints()
FLOATS = AttrKind("float array", _list_of(_is_num, "numbers"),
                  lambda v: tuple(float(x) for x in v) if isinstance(v, (list, tuple)) else v)
STRS = AttrKind("string array", _list_of(lambda x: type(x) is str, "strings"), _tuple)


def enum(*choices) -> AttrKind:
    def check(v):
        if v not in choices:
            return "must be one of " + ", ".join(f'"{c}"' for c in choices)
        return None
    return AttrKind("enum", check)


def optional(kind: AttrKind) -> AttrKind:
    """The kind, or unset (`None` in Python, absent in text)."""
    return AttrKind(kind.name, lambda v: None if v is None else kind.check(v), kind.coerce)
