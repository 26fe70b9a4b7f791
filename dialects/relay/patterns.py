"""Patterns of ``match``: their attribute form, their binders' types, and the
exhaustiveness check.

    text              attribute                              binds
    %x                #relay.pat_var                         the whole value
    _                 #relay.pat_wild                        nothing
    Cons(%h, _)       #relay.pat_ctor<"Cons", #relay.pat_var, #relay.pat_wild>
    (%a, %b)          #relay.pat_tuple<#relay.pat_var, #relay.pat_var>

An arm's region has one entry-block argument per ``%var`` of its pattern,
left to right.  Constructors are looked up by name (constructor names are
unique in a module) through a table (``ops.adt.AdtTable``): ``lookup(name)``
gives the ``relay.adt`` op defining constructor `name`, ``lookup.adt(name)``
the one named `name`; None when there is none.

Exhaustiveness is Maranget's usefulness algorithm ("Warnings for pattern
matching", JFP 2007): the wildcard row is useful after the arms iff some
value matches no arm, and the algorithm builds such a value (the witness
named in the error, e.g. ``Cons(_, Nil)``).
"""

from __future__ import annotations

from ...ir import types as T
from ...ir.attributes import DialectAttr

VAR, WILD, CTOR, TUPLE = "relay.pat_var", "relay.pat_wild", "relay.pat_ctor", "relay.pat_tuple"


class Pat:
    """A pattern; `tok` is where it was written (parse time only)."""

    __slots__ = ("kind", "name", "subs", "tok")

    def __init__(self, kind, name=None, subs=(), tok=None):
        self.kind = kind
        self.name = name
        self.subs = list(subs)
        self.tok = tok

    def binds(self) -> int:
        if self.kind == VAR:
            return 1
        return sum(s.binds() for s in self.subs)

    def text(self, names=None) -> str:
        """``Cons(%h, _)``; `names` is an iterator over binder names
        (``_`` stands for each binder without one, as in a witness)."""
        if self.kind == VAR:
            return next(names) if names is not None else "_"
        if self.kind == WILD:
            return "_"
        inner = ", ".join(s.text(names) for s in self.subs)
        if self.kind == TUPLE:
            return f"({inner})"
        return f"{self.name}({inner})" if self.subs else self.name

    def to_attr(self) -> DialectAttr:
        if self.kind == CTOR:
            return DialectAttr(CTOR, (self.name,) + tuple(s.to_attr() for s in self.subs))
        return DialectAttr(self.kind, tuple(s.to_attr() for s in self.subs))


_WILD = Pat(WILD)


def from_attr(a) -> Pat:
    """The pattern an attribute holds; ValueError when it is not one."""
    if not isinstance(a, DialectAttr):
        raise ValueError(f"a pattern must be a #relay.pat_* attribute, got {a!r}")
    if a.name in (VAR, WILD):
        if a.params:
            raise ValueError(f"#{a.name} takes no parameters")
        return Pat(a.name)
    if a.name == TUPLE:
        return Pat(TUPLE, subs=[from_attr(x) for x in a.params])
    if a.name == CTOR:
        if not a.params or type(a.params[0]) is not str:
            raise ValueError("#relay.pat_ctor needs the constructor's name first")
        return Pat(CTOR, a.params[0], [from_attr(x) for x in a.params[1:]])
    raise ValueError(f"unknown pattern #{a.name}")


def check_attr(v):
    """Attribute-kind check for a ``patterns`` array."""
    if not isinstance(v, tuple):
        return "must be an array of patterns"
    for a in v:
        try:
            from_attr(a)
        except ValueError as e:
            return str(e)
    return None


# -- binders ------------------------------------------------------------------------

def binder_types(pat: Pat, t, lookup, fail) -> list:
    """The types of `pat`'s binders when it matches a value of type `t`;
    `fail(pattern, message)` raises for a pattern that cannot match."""
    out = []
    _bind(pat, t, lookup, fail, out)
    return out


def _bind(p, t, lookup, fail, out):
    from .types import ADTType
    if p.kind == VAR:
        out.append(t)
        return
    if p.kind == WILD:
        return
    known = t is not T.incomplete
    if p.kind == TUPLE:
        if known and not isinstance(t, T.TupleType):
            fail(p, f"tuple pattern {p.text()} cannot match a value of type {t}")
        if known and len(t.types) != len(p.subs):
            fail(p, f"tuple pattern {p.text()} has {len(p.subs)} fields but the value is {t}")
        for s, st in zip(p.subs, t.types if known else [T.incomplete] * len(p.subs)):
            _bind(s, st, lookup, fail, out)
        return
    adt = lookup(p.name)
    if adt is None:
        fail(p, f"unknown constructor '{p.name}'")
    arity = adt.arity(p.name)
    if arity != len(p.subs):
        fail(p, f"constructor {p.name} of @{adt.sym_name} has {arity} field(s), the pattern gives {len(p.subs)}")
    if known:
        if not isinstance(t, ADTType) or t.adt != adt.sym_name:
            fail(p, f"{p.name} is a constructor of @{adt.sym_name}, but the value has type {t}")
        if len(t.args) != len(adt.type_params):
            fail(p, f"type {t} gives @{adt.sym_name} {len(t.args)} type argument(s), it takes "
                    f"{len(adt.type_params)}")
        fields = adt.field_types(p.name, t.args)
    else:
        fields = [T.incomplete] * arity
    for s, ft in zip(p.subs, fields):
        _bind(s, ft, lookup, fail, out)


# -- exhaustiveness -----------------------------------------------------------------

def missing_case(pats, t, lookup):
    """A value no pattern of `pats` matches, as a Pat (a witness), or None
    when the patterns are exhaustive.  `t` is the matched value's type
    (``?`` when unknown): it tells a constructor-less ADT's column apart."""
    w = _useful([[p] for p in pats], [t], lookup)
    return None if w is None else w[0]


def _is_wild(p):
    return p.kind in (VAR, WILD)


def _useful(rows, types, lookup):
    """A witness vector (one Pat per column) matched by no row, or None."""
    from .types import ADTType
    n = len(types)
    if n == 0:
        return None if rows else []
    t0, rest_types = types[0], types[1:]
    heads = [r[0] for r in rows]
    tup = next((h for h in heads if h.kind == TUPLE), None)
    if tup is not None or isinstance(t0, T.TupleType):
        k = len(tup.subs) if tup is not None else len(t0.types)
        sub_t = list(t0.types) if isinstance(t0, T.TupleType) else [T.incomplete] * k
        spec = [(list(r[0].subs) if r[0].kind == TUPLE else [_WILD] * k) + r[1:] for r in rows]
        w = _useful(spec, sub_t + rest_types, lookup)
        return None if w is None else [Pat(TUPLE, subs=w[:k])] + w[k:]
    ctor = next((h for h in heads if h.kind == CTOR), None)
    adt = lookup(ctor.name) if ctor is not None else None
    if adt is None and isinstance(t0, ADTType) and not any(not _is_wild(h) for h in heads):
        # no constructor written: only an ADT without constructors is covered
        adt = lookup.adt(t0.adt)
        if adt is not None and adt.constructor_names():
            adt = None
    if adt is None:
        w = _useful([r[1:] for r in rows if _is_wild(r[0])], rest_types, lookup)
        return None if w is None else [_WILD] + w
    names = adt.constructor_names()
    used = {h.name for h in heads if h.kind == CTOR}
    args = t0.args if isinstance(t0, ADTType) and t0.adt == adt.sym_name else None
    if all(c in used for c in names):
        for c in names:
            a = adt.arity(c)
            spec = []
            for r in rows:
                h = r[0]
                if h.kind == CTOR:
                    if h.name == c:
                        spec.append(list(h.subs) + r[1:])
                elif _is_wild(h):
                    spec.append([_WILD] * a + r[1:])
            ft = adt.field_types(c, args) if args is not None else [T.incomplete] * a
            w = _useful(spec, list(ft) + rest_types, lookup)
            if w is not None:
                return [Pat(CTOR, c, w[:a])] + w[a:]
        return None
    w = _useful([r[1:] for r in rows if _is_wild(r[0])], rest_types, lookup)
    if w is None:
        return None
    missing = next(c for c in names if c not in used)
    return [Pat(CTOR, missing, [_WILD] * adt.arity(missing))] + w

