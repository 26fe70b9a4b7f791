"""Parse callbacks for relay.lark."""

from __future__ import annotations

from ...ir import types as T
from ...ir.attributes import SymbolRef
from ...ir.core import OP_CLASSES, OpResult
from ...ir.diagnostics import DiagnosticError
from .ops.base import RELAY_PREFIX
from .ops.function import CallOp, ConstantOp, FuncOp, ReturnOp

GRAMMAR = "relay.lark"
OP_RULES = ["relay_func", "relay_op", "relay_call", "relay_constant"]


def symbol_name(tok) -> str:
    s = tok[1:]
    return s[1:-1] if s.startswith('"') else s


class Syntax:
    def relay_param(self, c):
        return (c[0], c[1])

    def relay_func_header(self, c):
        tok, sym = c[0], c[1]
        params, ret, attrs = [], None, {}
        for x in c[2:]:
            if type(x) is tuple:
                params.append(x)
            elif isinstance(x, T.Type):
                ret = x
            elif isinstance(x, dict):
                attrs = x
        self.open_op(isolated=True, args=params, terminators={"return": ReturnOp})
        return (tok, symbol_name(sym), [t for _, t in params], ret, attrs)

    def relay_func(self, c):
        self.close_op()
        (tok, name, ins, ret, attrs), region = c
        attrs = dict(attrs)
        attrs["sym_name"] = name
        if ret is None:
            body = region.blocks[0]
            last = body.last
            if last is not None and last.name == "relay.return":
                rets = [v.type for v in last.operands]
            else:
                rets = [T.incomplete]
        else:
            rets = [ret]
        attrs["function_type"] = T.FunctionType(ins, rets)
        return self.make_op(FuncOp, (), (), attrs, [region], tok)

    def relay_op(self, c):
        tok = c[0]
        cls = OP_CLASSES.get(RELAY_PREFIX + tok)
        if cls is None or cls in (FuncOp, CallOp, ConstantOp, ReturnOp):
            raise self.err(tok, f"unknown relay operator '{tok}'")
        attrs, rtype = {}, None
        for x in c[2:]:
            if isinstance(x, dict):
                attrs = x
            else:
                rtype = x
        operands = self.uses_in(c[1])
        op = self.make_op(cls, operands, (), attrs, (), tok)
        if rtype is None:
            try:
                op.verify_attributes()
                rtypes = op.infer_types()
            except DiagnosticError:
                op.drop_operands()
                raise
        else:
            rtypes = [rtype]
        op.results = [OpResult(t, op, i) for i, t in enumerate(rtypes)]
        return op

    def relay_call(self, c):
        tok, sym = c[0], c[1]
        rtypes = [x for x in c[3:] if isinstance(x, T.Type)] or [T.incomplete]
        return self.make_op(CallOp, self.uses_in(c[2]), rtypes, {"callee": SymbolRef(symbol_name(sym))}, (), tok)

    def relay_constant(self, c):
        tok, value = c
        return self.make_op(ConstantOp, (), [value.type], {"value": value}, (), tok)
