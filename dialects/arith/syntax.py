"""Parse callbacks for arith.lark."""

from __future__ import annotations

from ...ir import types as T
from ...ir.registry import get_op_class

GRAMMAR = "arith.lark"
OP_RULES = ["arith_binary", "arith_unary", "arith_constant", "arith_cmp", "arith_select", "arith_cast"]


class Syntax:
    def arith_binary(self, c):
        tok, a, b, t = c
        cls = get_op_class(str(tok))
        return self.make_op(cls, self.uses([a, b]), [t], None, (), tok)

    def arith_unary(self, c):
        tok, a, t = c
        return self.make_op(get_op_class(str(tok)), [self.use(a)], [t], None, (), tok)

    def arith_constant(self, c):
        tok, lit, t = c
        s = str(lit)
        if lit.type == "ARITH_BOOL":
            v = s == "true"
        elif lit.type == "INT":
            v = int(s, 16) if "x" in s else int(s)
        else:
            v = float(s)
        if T.is_float(t):
            v = float(v)
        return self.make_op(get_op_class("arith.constant"), (), [t], {"value": v}, (), tok)

    def arith_cmp(self, c):
        tok, pred, a, b, t = c
        cls = get_op_class(str(tok))
        rt = T.VectorType(t.shape, T.i1) if isinstance(t, T.VectorType) else T.i1
        op = self.make_op(cls, self.uses([a, b]), [rt], {"predicate": str(pred)}, (), tok)
        return op

    def arith_select(self, c):
        tok, cond, a, b, t = c
        return self.make_op(get_op_class("arith.select"), self.uses([cond, a, b]), [t], None, (), tok)

    def arith_cast(self, c):
        tok, a, src, dst = c
        v = self.use(a)
        if v.type is not src:
            raise self.err(a, f"'{a}' has type {v.type}, not {src}")
        return self.make_op(get_op_class(str(tok)), [v], [dst], None, (), tok)
