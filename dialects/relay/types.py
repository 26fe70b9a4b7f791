"""Relay's own types and the type algebra its language ops share.

    !relay.adt<@List<tensor<f32>>>      an algebraic data type applied to its arguments
    !relay.adt<@Nat>                    one without parameters
    !relay.ref<tensor<f32>>             a mutable cell holding a value (ops/ref.py)
    !A                                  a type parameter, inside a ``relay.adt`` definition

An ADT type is :class:`ADTType` (interned like every type, so ``is`` is
equality); ``ir/types.py`` calls :func:`parse_adt_type` for ``!relay.adt``.
A type parameter is an undotted opaque type (``OpaqueType("A")``): the core
type parser already reads ``!A`` that way whatever is loaded, so a
parameter means the same thing in every context.

Relay's ``Any`` is a ``?`` dimension.  Where a value of one type flows into a
place of another (a branch result into an ``if``, an argument into a
closure) the types must be *compatible*: equal up to dimensions that the
expected type leaves dynamic.  The type of an ``if`` or ``match`` whose
result is not written is the *join* of its branches: a dimension dynamic
in one branch is dynamic in the result, everything else must agree.
"""

from __future__ import annotations

import re

from ...ir import types as T
from ...ir.attributes import print_symbol_name


class ADTType(T.Type):
    """``!relay.adt<@Name<args>>``: the ADT defined by ``relay.adt @Name``."""

    __slots__ = ("adt", "args")

    def __new__(cls, adt: str, args=()):
        args = tuple(args)

        def init(t):
            t.adt = adt
            t.args = args
            inner = "<" + ", ".join(a._text for a in args) + ">" if args else ""
            t._text = f"!relay.adt<@{print_symbol_name(adt)}{inner}>"
        return T._interned(cls, (adt, args), init)

    @property
    def is_complete(self):
        return all(a.is_complete for a in self.args)


_SYMBOL = re.compile(r'@(?:([A-Za-z_][\w$.\-]*)|"([^"\n]*)")')


def parse_adt_type(p) -> ADTType:
    """The rest of ``!relay.adt<@Name<T, ...>>`` after its name (grammar:
    ``"<" "@" name ["<" type ("," type)* ">"] ">"``)."""
    p.expect("<")
    p.skip_ws()
    m = _SYMBOL.match(p.s, p.pos)
    if not m:
        raise T.TypeSyntaxError("expected '@name' of an ADT in !relay.adt<...>", p.pos)
    p.pos = m.end()
    name = m.group(1) if m.group(1) is not None else m.group(2)
    args = []
    if p.eat("<"):
        args.append(p.type())
        while p.eat(","):
            args.append(p.type())
        p.expect(">")
    p.expect(">")
    return ADTType(name, args)


T.TYPE_PARSERS["relay.adt"] = parse_adt_type


class RefType(T.Type):
    """``!relay.ref<T>``: a reference (a mutable cell) to a value of type T."""

    __slots__ = ("value_type",)

    def __new__(cls, value_type):
        def init(t):
            t.value_type = value_type
            t._text = f"!relay.ref<{value_type._text}>"
        return T._interned(cls, value_type, init)

    @property
    def is_complete(self):
        return self.value_type.is_complete


def parse_ref_type(p) -> RefType:
    """The rest of ``!relay.ref<T>`` after its name."""
    p.expect("<")
    t = p.type()
    p.expect(">")
    return RefType(t)


T.TYPE_PARSERS["relay.ref"] = parse_ref_type


# -- type parameters ------------------------------------------------------------

def type_var(name: str) -> T.Type:
    return T.OpaqueType(name)


def is_type_var(t) -> bool:
    return type(t) is T.OpaqueType and "." not in t.dialect_type and not t.body


def type_vars_in(t, out: set):
    """Add the names of the type parameters `t` mentions to `out`."""
    if is_type_var(t):
        out.add(t.dialect_type)
    elif isinstance(t, ADTType):
        for a in t.args:
            type_vars_in(a, out)
    elif isinstance(t, RefType):
        type_vars_in(t.value_type, out)
    elif isinstance(t, T.TupleType):
        for a in t.types:
            type_vars_in(a, out)
    elif isinstance(t, T.FunctionType):
        for a in t.inputs + t.results:
            type_vars_in(a, out)
    return out


def substitute(t, mapping: dict):
    """`t` with each type parameter named in `mapping` replaced."""
    if not mapping:
        return t
    if is_type_var(t):
        return mapping.get(t.dialect_type, t)
    if isinstance(t, ADTType):
        return ADTType(t.adt, [substitute(a, mapping) for a in t.args])
    if isinstance(t, RefType):
        return RefType(substitute(t.value_type, mapping))
    if isinstance(t, T.TupleType):
        return T.TupleType([substitute(a, mapping) for a in t.types])
    if isinstance(t, T.FunctionType):
        return T.FunctionType([substitute(a, mapping) for a in t.inputs],
                              [substitute(a, mapping) for a in t.results])
    return t


# -- compatibility and join -------------------------------------------------------

def compatible(actual, expected) -> bool:
    """Whether a value of type `actual` may stand where `expected` is wanted:
    the same type, except that `expected` may leave dimensions dynamic.  An
    incomplete type (``?``) on either side is not checked yet."""
    if actual is expected or not actual.is_complete or not expected.is_complete:
        return True
    ta, te = type(actual), type(expected)
    if ta is not te:
        return False
    if ta is T.TensorType:
        return (actual.element_type is expected.element_type and len(actual.shape) == len(expected.shape)
                and all(e is None or a == e for a, e in zip(actual.shape, expected.shape)))
    if ta is T.TupleType:
        return len(actual.types) == len(expected.types) and all(
            compatible(a, e) for a, e in zip(actual.types, expected.types))
    if ta is ADTType:
        return actual.adt == expected.adt and len(actual.args) == len(expected.args) and all(
            compatible(a, e) for a, e in zip(actual.args, expected.args))
    if ta is RefType:   # a cell is read and written: its type must fit both ways
        return compatible(actual.value_type, expected.value_type) and \
            compatible(expected.value_type, actual.value_type)
    if ta is T.FunctionType:
        # a closure may be used where one with more dynamic dims is expected
        # only if it accepts everything the expected one does
        return (len(actual.inputs) == len(expected.inputs) and len(actual.results) == len(expected.results)
                and all(compatible(e, a) for a, e in zip(actual.inputs, expected.inputs))
                and all(compatible(a, e) for a, e in zip(actual.results, expected.results)))
    return False


def join(a, b):
    """The most precise type both `a` and `b` are compatible with, or None
    when they differ in more than dynamic dimensions: ``tensor<4xf32>`` and
    ``tensor<?xf32>`` join to ``tensor<?xf32>``, ``tensor<4xf32>`` and
    ``tensor<3xf32>`` do not join (as Relay's unifier: Any matches any size,
    two sizes must be equal).  ``?`` joins to the other side."""
    if a is b:
        return a
    if a is T.incomplete:
        return b
    if b is T.incomplete:
        return a
    ta = type(a)
    if ta is not type(b):
        return None
    if ta is T.TensorType:
        if a.element_type is not b.element_type or len(a.shape) != len(b.shape):
            return None
        # Relay's Any unifies with any size; two different sizes do not
        if any(x != y and x is not None and y is not None for x, y in zip(a.shape, b.shape)):
            return None
        return T.TensorType([x if x == y else None for x, y in zip(a.shape, b.shape)], a.element_type)
    if ta is T.TupleType:
        if len(a.types) != len(b.types):
            return None
        parts = [join(x, y) for x, y in zip(a.types, b.types)]
        return None if None in parts else T.TupleType(parts)
    if ta is ADTType:
        if a.adt != b.adt or len(a.args) != len(b.args):
            return None
        parts = [join(x, y) for x, y in zip(a.args, b.args)]
        return None if None in parts else ADTType(a.adt, parts)
    if ta is RefType:
        return a if compatible(a, b) else None
    return None


def bind_type_vars(pattern, actual, mapping: dict) -> bool:
    """Match `actual` against `pattern` (a field type that may mention type
    parameters), extending `mapping` (name -> type, joined over every
    occurrence).  False when they cannot match."""
    if is_type_var(pattern):
        name = pattern.dialect_type
        if not actual.is_complete:
            return True
        prev = mapping.get(name)
        if prev is None:
            mapping[name] = actual
            return True
        j = join(prev, actual)
        if j is None:
            return False
        mapping[name] = j
        return True
    if not actual.is_complete:
        return True
    if isinstance(pattern, ADTType):
        return (isinstance(actual, ADTType) and actual.adt == pattern.adt
                and len(actual.args) == len(pattern.args)
                and all(bind_type_vars(p, a, mapping) for p, a in zip(pattern.args, actual.args)))
    if isinstance(pattern, RefType):
        return isinstance(actual, RefType) and bind_type_vars(pattern.value_type, actual.value_type, mapping)
    if isinstance(pattern, T.TupleType):
        return (isinstance(actual, T.TupleType) and len(actual.types) == len(pattern.types)
                and all(bind_type_vars(p, a, mapping) for p, a in zip(pattern.types, actual.types)))
    if isinstance(pattern, T.FunctionType):
        return (isinstance(actual, T.FunctionType) and len(actual.inputs) == len(pattern.inputs)
                and len(actual.results) == len(pattern.results)
                and all(bind_type_vars(p, a, mapping) for p, a in
                        zip(pattern.inputs + pattern.results, actual.inputs + actual.results)))
    return compatible(actual, pattern)
