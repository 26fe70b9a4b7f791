"""Parse callbacks for tir.lark: the ops with regions (func, for, if).

The other tir ops (load, store, alloc, broadcast, intrin, barrier) have an
``ASSEMBLY_FORMAT`` in ops.py; parser/grammar.py makes their rules."""

from __future__ import annotations

from lark import Token

from ...ir import types as T
from .ops import ForOp, FuncOp, IfOp

GRAMMAR = "tir.lark"
OP_RULES = ["tir_func", "tir_for", "tir_if"]


def _symbol(tok):
    s = tok[1:]
    return s[1:-1] if s.startswith('"') else s


class Syntax:
    def tir_param(self, c):
        return (c[0], c[1])

    def tir_func_header(self, c):
        tok, sym = c[0], c[1]
        params, attrs = [], {}
        for x in c[2:]:
            if type(x) is tuple:
                params.append(x)
            elif isinstance(x, dict):
                attrs = dict(x)
        self.open_op(isolated=True, args=params)
        attrs["sym_name"] = _symbol(sym)
        return (tok, attrs)

    def tir_func(self, c):
        self.close_op()
        (tok, attrs), region = c
        return self.make_op(FuncOp, (), (), attrs, [region], tok)

    def tir_bound(self, c):
        t = c[0]
        if t.type == "INT":
            return int(t, 16) if "x" in t else int(t)
        v = self.use(t)
        if v.type is not T.index:
            raise self.err(t, f"a loop bound must be an index, '{t}' is {v.type}")
        return v

    def tir_thread(self, c):
        from .ops import THREAD_TAGS
        tag = c[0][1:-1]
        if tag not in THREAD_TAGS:
            raise self.err(c[0], f"unknown thread tag '{tag}' (one of {', '.join(THREAD_TAGS)})")
        return ("thread", tag)

    def tir_for_header(self, c):
        tok, iv, lo, hi = c[:4]
        kind, thread, ann = "serial", None, {}
        for x in c[4:]:
            if isinstance(x, Token):
                kind = str(x)
            elif type(x) is tuple:
                kind, thread = x
            elif isinstance(x, dict):
                ann = x
        self.open_op(args=[(iv, T.index)])
        return (tok, lo, hi, kind, thread, ann)

    def tir_for(self, c):
        self.close_op()
        (tok, lo, hi, kind, thread, ann), region = c
        operands, attrs = [], {"kind": kind, "thread": thread}
        for key, b in (("lower", lo), ("upper", hi)):
            if isinstance(b, int):
                attrs[key] = b
            else:
                operands.append(b)
        attrs.update(ann)
        return self.make_op(ForOp, operands, (), attrs, [region], tok)

    def tir_if_header(self, c):
        self.open_op()
        return (c[0], self.use(c[1]))

    def tir_if(self, c):
        self.close_op()
        (tok, cond), *regions = c
        return self.make_op(IfOp, [cond], (), None, regions, tok)
