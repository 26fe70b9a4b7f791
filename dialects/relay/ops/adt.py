"""Algebraic data types: definitions, constructors and ``match``.

    relay.adt @List<A> {                        module level; A is a type parameter
      Cons(!A, !relay.adt<@List<!A>>),
      Nil
    }

    %l = Cons(%h, %t) : !relay.adt<@List<tensor<f32>>>     build a value
    %n = Nil : !relay.adt<@List<tensor<f32>>>

    %s = match %l : tensor<f32> {               every case must be covered...
      Cons(%h, Cons(_, %rest)) => {             ...nested patterns, binders, wildcards
        yield %h
      }
      Cons(%h, Nil) => { yield %h }
      Nil => { ... yield %zero }
    }
    %p = match? %l : tensor<f32> { Cons(%h, _) => { yield %h } }   partial: no check

A type parameter is written ``!A`` in types (``types.py``).  Constructor
names start with a capital letter (they are how the parser tells
``Cons(%a)`` from an operator) and are unique in the module.  In text, an
ADT is defined before the functions that build or match its values: the
parser resolves a constructor when it reads it, to type its binders.

A constructor's result type may be left out when its arguments determine
the type parameters (``Cons(%h, %t)``); ``Nil`` of a parametric ADT needs
it.  ``match`` arms are tried in order; each arm's region gets one argument
per ``%var`` of its pattern and ends in ``yield``.  The result type is the
join of the arms' (as for ``if``).  Exhaustiveness is checked when the IR
is verified, with a witness in the message (``Cons(_, Nil)``).
"""

from __future__ import annotations

import re

from ....ir import types as T
from ....ir.attrkinds import STR, STRS, FLAG, optional
from ....ir.attributes import UNIT
from ....ir.core import Attr, AttrKind, Operation
from ....ir.diagnostics import DiagnosticError
from ....ir.printer import print_symbol
from ....ir import symbols
from ....ir.traits import PURE, SYMBOL as SYMBOL_TRAIT
from .. import patterns as P
from ..types import ADTType, bind_type_vars, compatible, is_type_var, substitute, type_var, type_vars_in
from .control import branch_yields, check_yields, joined_type

CTOR_NAME = re.compile(r"[A-Z][A-Za-z0-9_]*\Z")
PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _check_constructors(v):
    if not isinstance(v, dict):
        return "must be a dictionary {Name = [field types]}"
    for k, fields in v.items():
        if not isinstance(fields, tuple) or not all(isinstance(f, T.Type) for f in fields):
            return f"entry '{k}' must be an array of field types"
    return None


CONSTRUCTORS = AttrKind("constructors", _check_constructors)
PATTERNS = AttrKind("patterns", P.check_attr)


class AdtOp(Operation):
    """``relay.adt @Name<A, ...> { Ctor(T, ...), ... }``: a type definition."""

    __slots__ = ()
    name = "relay.adt"
    OPERANDS = ()
    RESULTS = ()
    NUM_REGIONS = 0
    ATTRS = {"sym_name": Attr(STR), "type_params": Attr(STRS, ()),
             "constructors": Attr(CONSTRUCTORS)}
    traits = frozenset({SYMBOL_TRAIT})

    def constructor_names(self):
        return list(self.attributes["constructors"])

    def arity(self, ctor: str) -> int:
        return len(self.attributes["constructors"][ctor])

    def instance_type(self) -> ADTType:
        """``!relay.adt<@List<!A>>``: the type with its own parameters."""
        return ADTType(self.attributes["sym_name"], [type_var(p) for p in self.attributes["type_params"]])

    def field_types(self, ctor: str, args=None):
        """The constructor's field types, with the type arguments `args`
        substituted for the parameters (None: left as parameters)."""
        fields = self.attributes["constructors"][ctor]
        if args is None:
            return list(fields)
        return [substitute(f, dict(zip(self.attributes["type_params"], args))) for f in fields]

    def construct_type(self, ctor: str, arg_types):
        """(the type of ``ctor(args)`` or None, why not): the type arguments
        are read off the arguments; None when one is not determined."""
        mapping: dict = {}
        for i, (f, a) in enumerate(zip(self.attributes["constructors"][ctor], arg_types)):
            if not bind_type_vars(f, a, mapping):
                return None, f"field {i} of {ctor} is {substitute(f, mapping)}, but the argument is {a}"
        params = self.attributes["type_params"]
        missing = [p for p in params if p not in mapping]
        if missing:
            if any(not t.is_complete for t in arg_types):
                return None, ""
            return None, (f"cannot tell the type argument !{missing[0]} of @{self.sym_name} from the "
                          f"arguments of {ctor}; write the result type")
        return ADTType(self.sym_name, [mapping[p] for p in params]), ""

    def verify_(self):
        params = self.attributes["type_params"]
        for p in params:
            if not PARAM_NAME.match(p):
                raise self.error(f"type parameter '{p}' is not a plain identifier")
        if len(set(params)) != len(params):
            raise self.error("has a repeated type parameter")
        for c, fields in self.attributes["constructors"].items():
            if not CTOR_NAME.match(c):
                raise self.error(f"constructor '{c}' must be an identifier starting with a capital letter")
            for i, f in enumerate(fields):
                if not f.is_complete:
                    raise self.error(f"field {i} of {c} has no type")
                bad = type_vars_in(f, set()) - set(params)
                if bad:
                    raise self.error(f"field {i} of {c} mentions !{sorted(bad)[0]}, which is not a "
                                     f"type parameter of @{self.sym_name}")
                self._check_adt_refs(c, i, f)
        adt_table(self)   # constructor names unique in the module

    def _check_adt_refs(self, ctor, i, t):
        if isinstance(t, ADTType):
            d = symbols.lookup_symbol(self, t.adt)
            if d is None or d.name != "relay.adt":
                raise self.error(f"field {i} of {ctor} has type {t}, but there is no relay.adt @{t.adt}")
            if len(t.args) != len(d.attributes["type_params"]):
                raise self.error(f"field {i} of {ctor} gives @{t.adt} {len(t.args)} type argument(s), "
                                 f"it takes {len(d.attributes['type_params'])}")
            kids = t.args
        elif isinstance(t, T.TupleType):
            kids = t.types
        elif isinstance(t, T.FunctionType):
            kids = t.inputs + t.results
        else:
            return
        for k in kids:
            self._check_adt_refs(ctor, i, k)

    def print_custom(self, p):
        a = self.attributes
        ctors = a["constructors"]
        if (set(a) != {"sym_name", "type_params", "constructors"} or not isinstance(ctors, dict)
                or not all(CTOR_NAME.match(c) for c in ctors)
                or not all(PARAM_NAME.match(x) for x in a["type_params"])):
            return p.print_generic(self)
        p.write("relay.adt " + print_symbol(a["sym_name"]))
        if a["type_params"]:
            p.write("<" + ", ".join(a["type_params"]) + ">")
        if not ctors:
            p.write(" {}")
            return
        p.write(" {")
        items = list(ctors.items())
        for i, (c, fields) in enumerate(items):
            p.write("\n" + p.indent + "  " + c)
            if fields:
                p.write("(" + ", ".join(f._text for f in fields) + ")")
            if i + 1 < len(items):
                p.write(",")
        p.write("\n" + p.indent + "}")


class AdtTable:
    """Constructor name -> its relay.adt (call it), ADT name -> relay.adt
    (``.adt(name)``); the lookup that patterns.py takes."""

    __slots__ = ("ctors", "adts")

    def __init__(self):
        self.ctors: dict = {}
        self.adts: dict = {}

    def __call__(self, ctor):
        return self.ctors.get(ctor)

    def adt(self, name):
        return self.adts.get(name)

    def add(self, op, where=None):
        """Register `op`; a constructor name defined twice is an error at
        `where` (a token's location, or op's)."""
        self.adts[op.attributes["sym_name"]] = op
        for c in op.attributes["constructors"]:
            prev = self.ctors.get(c)
            if prev is not None and prev is not op:
                raise DiagnosticError(where or op.loc,
                                      f"constructor '{c}' is already defined by @{prev.attributes['sym_name']}",
                                      [(prev.loc, "the first definition is here")])
            self.ctors[c] = op


def adt_table(from_op) -> AdtTable:
    """The ADTs of the module around `from_op`.  While the verifier runs
    (``symbols.caching``) the table is built once per module."""
    table_op = symbols.nearest_symbol_table(from_op) if from_op.name != "builtin.module" else from_op
    cache = symbols._cache   # the verifier's per-run cache, keyed by op id
    key = ("relay.adt_table", id(table_op))
    if cache is not None:
        t = cache.get(key)
        if t is not None:
            return t
    t = AdtTable()
    if table_op is not None:
        for op in symbols.table_of(table_op).values():
            if op.name == "relay.adt":
                t.add(op)
    if cache is not None:
        cache[key] = t
    return t


# -- values -------------------------------------------------------------------------

class ConstructOp(Operation):
    """``%v = Cons(%a, %b) : !relay.adt<@List<T>>``, ``%n = Nil : ...``."""

    __slots__ = ()
    name = "relay.construct"
    OPERANDS = ("*fields",)
    RESULTS = ("result",)
    ATTRS = {"constructor": Attr(STR)}
    traits = frozenset({PURE})

    @property
    def constructor(self) -> str:
        return self.attributes["constructor"]

    def adt(self, table=None) -> AdtOp:
        table = table if table is not None else adt_table(self)
        d = table(self.constructor)
        if d is None:
            raise self.error(f"unknown constructor '{self.constructor}'")
        return d

    def infer_types(self, table=None):
        d = self.adt(table)
        self._check_arity(d)
        t, why = d.construct_type(self.constructor, [v.type for v in self.operands])
        if t is None:
            if why:
                raise self.error(why)
            return [T.incomplete]
        return [t]

    def _check_arity(self, d):
        n = d.arity(self.constructor)
        if n != len(self.operands):
            raise self.error(f"constructor {self.constructor} of @{d.sym_name} takes {n} field(s), "
                             f"got {len(self.operands)}")

    def verify_(self, table=None):
        d = self.adt(table)
        self._check_arity(d)
        r = self.results[0].type
        if r is T.incomplete:
            return
        if not isinstance(r, ADTType) or r.adt != d.sym_name:
            raise self.error(f"builds a value of @{d.sym_name}, but its type is {r}")
        if len(r.args) != len(d.attributes["type_params"]):
            raise self.error(f"type {r} gives @{d.sym_name} {len(r.args)} type argument(s), it takes "
                             f"{len(d.attributes['type_params'])}")
        for i, (v, f) in enumerate(zip(self.operands, d.field_types(self.constructor, r.args))):
            if not compatible(v.type, f):
                raise self.error(f"field {i} of {self.constructor} must be {f}, got {v.type}")

    def print_custom(self, p):
        if not CTOR_NAME.match(self.constructor) or len(self.results) != 1:
            return p.print_generic(self)
        p.write(self.constructor)
        if self.operands:
            p.write("(" + p.values(self.operands) + ")")
        t = self.results[0].type
        if t.is_complete:
            p.write(" : " + t._text)


class MatchOp(Operation):
    """``%r = match %v : T { Pattern => { ... yield %x } ... }``."""

    __slots__ = ()
    name = "relay.match"
    OPERANDS = ("value",)
    RESULTS = ("result",)
    ATTRS = {"patterns": Attr(PATTERNS), "partial": Attr(optional(FLAG), None)}
    traits = frozenset()

    @property
    def is_partial(self) -> bool:
        return self.attributes.get("partial") is UNIT

    def pattern_list(self):
        return [P.from_attr(a) for a in self.attributes["patterns"]]

    def infer_types(self):
        return [joined_type(self, branch_yields(self, "arm"), "arm")]

    def binder_types(self, table=None):
        """Per arm, the types its binders get from the matched value's type
        (``?`` where it is not known); errors name the arm."""
        table = table if table is not None else adt_table(self)
        t = self.operands[0].type
        out = []
        for i, (pat, region) in enumerate(zip(self.pattern_list(), self.regions)):
            def fail(p, msg, i=i, pat=pat, region=region):
                raise self.error(f"arm {i} ({_arm_text(pat, region)}): {msg}")
            out.append(P.binder_types(pat, t, table, fail))
        return out

    def verify_(self, table=None):
        pats = self.pattern_list()
        if len(pats) != len(self.regions):
            raise self.error(f"has {len(pats)} patterns but {len(self.regions)} regions")
        yields = branch_yields(self, "arm")
        table = table if table is not None else adt_table(self)
        for i, (pat, region, want) in enumerate(zip(pats, self.regions, self.binder_types(table))):
            args = region.blocks[0].args
            if len(args) != len(want):
                raise self.error(f"arm {i} ({_arm_text(pat, region)}) binds {len(want)} value(s) but its region "
                                 f"takes {len(args)}")
            for a, w in zip(args, want):
                if a.type.is_complete and w.is_complete and a.type is not w:
                    raise self.error(f"arm {i} ({_arm_text(pat, region)}): a binder has type {a.type}, the pattern "
                                     f"gives it {w}")
        check_yields(self, yields, "arm")
        if not self.is_partial:
            w = P.missing_case(pats, self.operands[0].type, table)
            if w is not None:
                raise self.error(f"is not exhaustive: no arm matches {w.text()} "
                                 "(write 'match?' for a partial match)")

    def print_custom(self, p):
        try:
            pats = self.pattern_list()
        except ValueError:
            return p.print_generic(self)
        if (len(pats) != len(self.regions) or len(self.results) != 1 or len(self.operands) != 1
                or any(len(r.blocks) != 1 or len(r.blocks[0].args) != pat.binds()
                       for pat, r in zip(pats, self.regions))
                or any(not _printable(pat) for pat in pats)
                or set(self.attributes) - {"patterns", "partial"}):
            return p.print_generic(self)
        p.write(("match? " if self.is_partial else "match ") + p.value(self.operands[0]))
        t = self.results[0].type
        if t.is_complete:
            p.write(" : " + t._text)
        p.write(" {")
        outer = p.indent
        p.indent = outer + "  "
        for pat, region in zip(pats, self.regions):
            p.write("\n" + p.indent)
            # binders belong to the arm: the next arm may reuse their names
            p.push_scope(isolated=False)
            p.write(pat.text(p.define(a) for a in region.blocks[0].args))
            p.write(" => ")
            p.print_region(region)
            p.pop_scope()
        p.indent = outer
        p.write("\n" + outer + "}")


def _arm_text(pat, region) -> str:
    """``Cons(%h, _)``, with the binders' names when the region has them."""
    args = region.blocks[0].args if len(region.blocks) == 1 else []
    names = [f"%{a.name}" if a.name else "%_" for a in args]
    if len(names) != pat.binds():
        return pat.text()
    return pat.text(iter(names))


def _printable(pat) -> bool:
    if pat.kind == P.CTOR and not CTOR_NAME.match(pat.name):
        return False
    return all(_printable(s) for s in pat.subs)


__all__ = ["AdtOp", "AdtTable", "ConstructOp", "MatchOp", "adt_table", "is_type_var"]
