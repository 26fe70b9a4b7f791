"""The header and checks te.func shares with relay.func.

    te.func @name(%a: T, ...) -> R attributes {...} { body; return %r }

A copy of relay's ``print_func_like`` / ``verify_func_like`` (te sits below
relay and must not import it); the two could move to ``ir/`` together.
"""

from __future__ import annotations

from ...ir import types as T
from ...ir.printer import print_symbol

SHOWN_IN_HEADER = ("sym_name", "function_type")


def print_func_like(op, p, keyword):
    ft = op.attributes["function_type"]
    p.write(f"{keyword} {print_symbol(op.attributes['sym_name'])}(")
    p.push_scope()
    p.write(", ".join(f"{p.define(a)}: {a.type}" for a in op.body.args))
    p.write(")")
    if len(ft.results) == 1:
        p.write(f" -> {ft.results[0]}")
    elif ft.results:
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
    argt = tuple(a.type for a in body.args)
    if argt != ft.inputs:
        raise op.error(f"entry block arguments ({', '.join(map(str, argt))}) do not match the "
                       f"function type {ft}")
    ret = body.last
    if ret is None or ret.name != return_name:
        raise op.error(f"body must end with '{return_name.split('.')[-1]}'")
    got = [v.type for v in ret.operands]
    if len(got) != len(ft.results):
        raise ret.error(f"returns {len(got)} value(s) but the function type has {len(ft.results)} result(s)")
    for i, (g, w) in enumerate(zip(got, ft.results)):
        if g is not w:
            raise ret.error(f"type of return operand {i} ({g}) doesn't match function result type ({w}) "
                            f"in function @{op.attributes['sym_name']}",
                            notes=[(op.loc, "function defined here")])
