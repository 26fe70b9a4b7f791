"""Parse callbacks for te.lark.

te.write, te.realize, te.intrin, te.extern and te.extern_call have an
``ASSEMBLY_FORMAT`` in ops.py; parser/grammar.py makes their rules."""

from __future__ import annotations

import re

from lark import Token

from ...ir import types as T
from ...ir.attributes import SymbolRef
from ...ir.core import OpResult
from ...ir.registry import get_op_class
from .ops import DYNAMIC_EXTENT, ComputeOp, FuncOp, ReducerOp, ReadOp, ReturnOp, YieldOp
from .schedule_ops import AXIS, AxesOp, FuseOp, SplitOp, TileOp, is_stage, stage_axis_count

GRAMMAR = "te.lark"
OP_RULES = ["te_reducer", "te_func", "te_compute", "te_read", "te_schedule", "te_stage"]

_NAME = re.compile(r"%[A-Za-z0-9_$.\-]+(#[0-9]+)?")

# results each schedule op makes; te.axes makes one per axis of its stage
_RESULT_COUNT = {SplitOp: 2, FuseOp: 1, TileOp: 4}


def _symbol(tok):
    s = tok[1:]
    return s[1:-1] if s.startswith('"') else s


class Syntax:
    def te_param(self, c):
        return (c[0], c[1])

    def te_results(self, c):
        return list(c)

    def te_func_header(self, c):
        tok, sym = c[0], c[1]
        params, rets, attrs = [], None, {}
        for x in c[2:]:
            if type(x) is tuple:
                params.append(x)
            elif type(x) is list:
                rets = x
            elif isinstance(x, dict):
                attrs = dict(x)
        self.open_op(isolated=True, args=params, terminators={"return": ReturnOp})
        attrs["sym_name"] = _symbol(sym)
        return (tok, [t for _, t in params], rets, attrs)

    def te_func(self, c):
        self.close_op()
        (tok, ins, rets, attrs), region = c
        if rets is None:
            last = region.blocks[0].last
            rets = [v.type for v in last.operands] if isinstance(last, ReturnOp) else []
        attrs["function_type"] = T.FunctionType(ins, rets)
        return self.make_op(FuncOp, (), (), attrs, [region], tok)

    def te_reducer_header(self, c):
        tok, sym, a, b, lit = c
        if a[1] is not b[1]:
            raise self.err(b[0], f"a reducer combines two values of one type, got {a[1]} and {b[1]}")
        s = str(lit)
        v = int(s, 0) if lit.type == "INT" else float(s)
        if T.is_float(a[1]):
            v = float(v)
        elif lit.type != "INT":
            raise self.err(lit, f"the identity of a {a[1]} reducer is an integer, got {s}")
        self.open_op(isolated=True, args=[a, b], terminators={"yield": YieldOp})
        return (tok, {"sym_name": _symbol(sym), "identity": v})

    def te_reducer(self, c):
        self.close_op()
        (tok, attrs), region = c
        return self.make_op(ReducerOp, (), (), attrs, [region], tok)

    # -- computes ------------------------------------------------------------------

    def te_reduce_axis(self, c):
        return (c[0], int(c[1], 0) if len(c) > 1 else DYNAMIC_EXTENT)

    def te_reduce(self, c):
        _, *axes, reducer = c
        return (axes, reducer)

    def te_compute_header(self, c):
        tok, idx = c[0], c[1]
        axes, reducer, t, attrs, sizes = [], None, None, {}, []
        for x in c[2:]:
            if isinstance(x, Token) and x.type == "VALUE_LIST":
                sizes = self.uses_in(x)
            elif type(x) is tuple:
                axes, reducer = x
            elif isinstance(x, T.Type):
                t = x
            elif isinstance(x, dict):
                attrs = dict(x)
        names = [Token("VALUE", m.group(0), line=idx.line, column=idx.column + m.start())
                 for m in _NAME.finditer(idx)]
        if not isinstance(t, T.TensorType):
            raise self.err(tok, f"te.compute makes a tensor, not {t}")
        if len(names) != t.rank:
            raise self.err(idx, f"{len(names)} index name(s) for a rank-{t.rank} tensor {t}")
        args = [(n, T.index) for n in names] + [(n, T.index) for n, _ in axes]
        self.open_op(args=args, terminators={"yield": YieldOp})
        if reducer is not None:
            attrs["reducer"] = SymbolRef(_symbol(reducer)) if reducer.startswith("@") else reducer[1:-1]
        attrs["reduce_extents"] = tuple(e for _, e in axes)
        return (tok, t, attrs, sizes)

    def te_compute(self, c):
        self.close_op()
        (tok, t, attrs, sizes), region = c
        return self.make_op(ComputeOp, sizes, [t], attrs, [region], tok)

    # -- element access ----------------------------------------------------------

    def te_guard(self, c):
        cond, lit = c
        s = str(lit)
        v = float(int(s, 0)) if lit.type == "INT" else float(s)
        return (self.use(cond), v)

    def te_read(self, c):
        tok, tensor, idx = c[0], c[1], c[2]
        operands = [self.use(tensor)] + self.uses_in(idx)
        attrs = None
        if len(c) == 5:
            cond, v = c[3]
            operands.append(cond)
            attrs = {"else_value": v}
        return self.make_op(ReadOp, operands, [c[-1]], attrs, (), tok)

    # -- schedules -----------------------------------------------------------------

    def te_schedule(self, c):
        tok = c[0]
        cls = get_op_class(str(tok))
        attrs = {}
        operands = []
        for x in c[1:]:
            if isinstance(x, dict):
                attrs = x
            else:
                operands.append(self.use(x))
        n = _RESULT_COUNT.get(cls, 0)
        if cls is AxesOp:
            if not operands or not is_stage(operands[0]):
                raise self.err(c[1], f"te.axes needs a stage (the result of a te.compute), '{c[1]}' is not one")
            n = stage_axis_count(operands[0])
        op = self.make_op(cls, operands, (), attrs, (), tok)
        op.results = [OpResult(AXIS, op, i) for i in range(n)]
        return op

    def te_stage(self, c):
        tok, t = c[0], c[-1]
        attrs = {}
        operands = []
        for x in c[1:-1]:
            if isinstance(x, dict):
                attrs = x
            elif x is not None:
                operands.append(self.use(x))
        return self.make_op(get_op_class(str(tok)), operands, [t], dict(attrs), (), tok)
