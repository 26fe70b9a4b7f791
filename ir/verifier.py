"""The verifier: every op's own checks, plus the rules of SSA.

Runs after parsing and, with ``--verify-each`` (the default), after every
pass.  Checks, for every op in pre-order:

* the op's declaration (operand/result counts, attribute kinds, regions,
  terminators) and its ``verify_`` hook;
* dominance: each operand is a block argument of an enclosing block, or the
  result of an op earlier in an enclosing block, never across an
  isolated-from-above op;
* symbols: names are unique within each symbol table.
"""

from __future__ import annotations

from .core import BlockArgument, Operation, OpResult
from .diagnostics import DiagnosticError
from .traits import ISOLATED_FROM_ABOVE, SYMBOL, SYMBOL_TABLE
from . import symbols


def verify(root: Operation):
    with symbols.caching():
        _verify(root)


def _verify(root: Operation):
    order: dict[int, int] = {}
    n = 0
    for op in root.walk():
        order[id(op)] = n
        n += 1
    for op in root.walk():
        if op.operands:
            for i, v in enumerate(op.operands):
                _check_dominance(op, i, v, order)
        if SYMBOL_TABLE in op.traits:
            _check_symbols(op)
        if SYMBOL in op.traits:
            parent = op.parent_op
            if parent is not None and SYMBOL_TABLE not in parent.traits:
                # a definition inside a function body would be run as a step of it
                raise op.error(f"defines a symbol, so it belongs at the top level of a module, "
                               f"not inside '{parent.name}'")
        for r in op.results:
            if r.type not in _SHAPES_OK:
                _check_shape(op, r.type)
        op.verify()


_SHAPES_OK: set = set()


def _check_shape(op: Operation, t):
    """A shaped result type's element count must fit i64 (types built in
    Python; the type parser refuses such text)."""
    from .types import MAX_ELEMENTS, ShapedType
    if isinstance(t, ShapedType):
        n = 1
        for d in t.shape:
            if d is not None:
                n *= d
        if n > MAX_ELEMENTS:
            raise op.error(f"result type {t} has {n} elements, more than fit in i64")
    if len(_SHAPES_OK) < 100000:
        _SHAPES_OK.add(t)


def _check_dominance(user: Operation, i: int, v, order):
    if isinstance(v, OpResult):
        d = v.op
        target_block = d.parent
        if target_block is None:
            raise user.error(f"operand #{i} is the result of an op that is not in any block")
    elif isinstance(v, BlockArgument):
        d = None
        target_block = v.block
    else:
        raise user.error(f"operand #{i} is not a value")
    a = user
    while True:
        if a.parent is target_block:
            if d is not None and (a is d or order.get(id(d), 1 << 62) >= order.get(id(a), -1)):
                raise user.error(f"operand #{i} does not dominate this use",
                                 notes=[(d.loc, "operand defined here")])
            return
        parent = a.parent_op
        if parent is None or ISOLATED_FROM_ABOVE in parent.traits:
            break  # nothing flows into an isolated-from-above op
        a = parent
    notes = [(d.loc, "operand defined here")] if d is not None else []
    raise user.error(f"operand #{i} is not visible here (defined outside this region)", notes=notes)


def _check_symbols(table_op: Operation):
    seen = {}
    for r in table_op.regions:
        for b in r.blocks:
            for op in b.ops:
                name = op.attributes.get("sym_name")
                if isinstance(name, str):
                    prev = seen.get(name)
                    if prev is not None:
                        raise DiagnosticError(op.loc, f"redefinition of symbol '@{name}'",
                                              [(prev.loc, "previous definition here")])
                    seen[name] = op
