"""The header and checks every function-like op shares (relay.func, te.func).

    <keyword> @name(%a: T, ...) -> R attributes {...} { body; return %r }

The entry block's arguments are the parameters, ``function_type`` the
signature; a result type not inferred yet (``?``) is left out of the header
and not checked.
"""

from __future__ import annotations

from . import types as T
from .printer import print_symbol

SHOWN_IN_HEADER = ("sym_name", "function_type")


def print_func_like(op, p, keyword):
    """``<keyword> @name(%a: T, ...) -> R attributes {...} { body }``, shared
    by relay.func and te.func."""
    ft = op.attributes["function_type"]
    p.write(f"{keyword} {print_symbol(op.attributes['sym_name'])}(")
    p.push_scope()
    args = op.body.args
    p.write(", ".join(f"{p.define(a)}: {a.type}" for a in args))
    p.write(")")
    if ft.results and all(t.is_complete for t in ft.results):
        if len(ft.results) == 1:
            p.write(f" -> {ft.results[0]}")
        else:
            p.write(" -> (" + ", ".join(str(t) for t in ft.results) + ")")
    rest = {k: v for k, v in op.attributes.items() if k not in SHOWN_IN_HEADER}
    if rest:
        p.write(" attributes " + p.attr_dict(rest))
    p.write(" ")
    p.print_region(op.region)
    p.pop_scope()


def verify_func_like(op, return_name):
    ft = op.attributes["function_type"]
    if not isinstance(ft, T.FunctionType):
        raise op.error("function_type must be a function type")
    body = op.region.blocks[0]
    argt = [a.type for a in body.args]
    if tuple(argt) != ft.inputs:
        raise op.error(f"entry block arguments ({', '.join(map(str, argt))}) do not match the "
                       f"function type {ft}")
    ret = body.last
    if ret is None or ret.name != return_name:
        raise op.error(f"body must end with '{return_name}'")
    got = [v.type for v in ret.operands]
    if len(got) != len(ft.results):
        raise ret.error(f"returns {len(got)} value(s) but the function type has {len(ft.results)} result(s)")
    for i, (g, w) in enumerate(zip(got, ft.results)):
        if g.is_complete and w.is_complete and g is not w:
            raise ret.error(f"type of return operand {i} ({g}) doesn't match function result type ({w}) "
                            f"in function @{op.attributes['sym_name']}",
                            notes=[(op.loc, "function defined here")])
