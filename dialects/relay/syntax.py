"""Parse callbacks for relay.lark.

The language ops type themselves as they are read where they can, so that
an error points at the token that causes it: ``if`` and ``match`` take the
join of their branches when no type is written, ``fn`` its returned type,
a constructor the type its arguments determine, and a ``match`` arm's
binders the types its pattern gives them.  For that the parser keeps the
ADTs defined so far (``_relay_adts``): in text, an ADT is defined before
its constructors are used.  What cannot be typed yet (a call to a function
defined later) is left ``?`` for ``--infer-type``.
"""

from __future__ import annotations

from ...ir import types as T
from ...ir.attributes import UNIT, FrozenDict, SymbolRef
from ...ir.core import OP_CLASSES, OpResult
from ...ir.diagnostics import DiagnosticError
from . import patterns as P
from .ops.adt import AdtOp, AdtTable, ConstructOp, MatchOp
from .ops.base import RELAY_PREFIX, RelayOp
from .ops.closure import CallIndirectOp, FnOp, FuncRefOp
from .ops.control import IfOp, YieldOp, joined_type
from .ops.function import CallOp, ConstantOp, FuncOp, ReturnOp
from .ops.loop import LoopOp

GRAMMAR = "relay.lark"
OP_RULES = ["relay_func", "relay_op", "relay_call", "relay_call_value", "relay_constant", "relay_func_ref",
            "relay_if", "relay_fn", "relay_loop", "relay_adt", "relay_construct", "relay_match"]


def symbol_name(tok) -> str:
    s = tok[1:]
    return s[1:-1] if s.startswith('"') else s


def _split_type(c, start):
    """The optional trailing ``: type`` of a rule's children."""
    return next((x for x in c[start:] if isinstance(x, T.Type)), None)


class Syntax:
    def reset(self, *args, **kw):
        super().reset(*args, **kw)
        self._relay_adts = AdtTable()   # the ADTs defined so far in this parse
        self._relay_matches = []        # the scrutinee of each match being read

    # -- functions, operators, calls, constants ---------------------------------

    def relay_param(self, c):
        return (c[0], c[1])

    def relay_results(self, c):
        """``-> T`` or ``-> (T1, T2)``: the result types, as a list."""
        return list(c)

    def relay_func_header(self, c):
        tok, sym = c[0], c[1]
        params, ret, attrs = [], None, {}
        for x in c[2:]:
            if type(x) is tuple:
                params.append(x)
            elif type(x) is list:
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
            if isinstance(last, ReturnOp):
                rets = [v.type for v in last.operands]
            else:
                rets = [T.incomplete]
        else:
            rets = ret
        attrs["function_type"] = T.FunctionType(ins, rets)
        return self.make_op(FuncOp, (), (), attrs, [region], tok)

    def relay_op(self, c):
        tok = c[0]
        cls = OP_CLASSES.get(RELAY_PREFIX + tok)
        # the language ops have their own syntax; `relay_op` is for operators
        if cls is None or not issubclass(cls, RelayOp) or cls in (CallOp, ConstantOp):
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

    def relay_call_value(self, c):
        """``relay_call_value: RELAY_CALL VALUE VALUE_LIST [":" type]``:
        ``call %f(%a, ...)``; the type defaults to the callee's result."""
        tok = c[0]
        callee = self.use(c[1])
        args = self.uses_in(c[2])
        rtype = _split_type(c, 3)
        if rtype is None:
            ft = callee.type
            if isinstance(ft, T.FunctionType) and len(ft.results) == 1:
                rtype = ft.results[0]
            elif ft.is_complete:
                raise self.err(c[1], f"'{c[1]}' has type {ft}, which is not a function with one result")
            else:
                rtype = T.incomplete
        return self.make_op(CallIndirectOp, [callee] + args, [rtype], None, (), tok)

    def relay_constant(self, c):
        tok, value = c
        return self.make_op(ConstantOp, (), [value.type], {"value": value}, (), tok)

    def relay_func_ref(self, c):
        """``relay_func_ref: RELAY_CONSTANT SYMBOL [":" type]``: a global
        function as a value; without a type it waits for --infer-type (@f
        may be defined later)."""
        tok, sym = c[0], c[1]
        rtype = _split_type(c, 2) or T.incomplete
        return self.make_op(FuncRefOp, (), [rtype], {"callee": SymbolRef(symbol_name(sym))}, (), tok)

    # -- if and fn ------------------------------------------------------------------

    def relay_if_header(self, c):
        """``relay_if_header: RELAY_IF VALUE [":" type]``: both branches see
        the enclosing scope and end in ``yield``."""
        self.open_op(terminators={"yield": YieldOp})
        return (c[0], self.use(c[1]), _split_type(c, 2))

    def relay_if(self, c):
        """``relay_if: relay_if_header region "else" region``."""
        self.close_op()
        (tok, cond, rtype), then_r, else_r = c
        op = self.make_op(IfOp, [cond], (), None, [then_r, else_r], tok)
        self._set_branch_type(op, rtype, "branch")
        return op

    def _set_branch_type(self, op, rtype, what):
        """The result of an if / match: as written, else the join of what
        its regions yield (an error at the first yield that does not join)."""
        try:
            t = rtype if rtype is not None else joined_type(op, _yields(op), what)
        except DiagnosticError:
            op.drop_operands()
            raise
        op.results = [OpResult(t, op, 0)]

    def relay_fn_header(self, c):
        """``relay_fn_header: RELAY_FN "(" [relay_param ("," relay_param)*] ")"
        ["->" type] ["attributes" attr_dict]``."""
        tok = c[0]
        params, ret, attrs = [], None, {}
        for x in c[1:]:
            if type(x) is tuple:
                params.append(x)
            elif isinstance(x, T.Type):
                ret = x
            elif isinstance(x, dict):
                attrs = x
        # not isolated: the body may use (capture) every value in scope
        self.open_op(isolated=False, args=params, terminators={"return": ReturnOp})
        return (tok, [t for _, t in params], ret, attrs)

    def relay_fn(self, c):
        """``relay_fn: relay_fn_header region``: without ``-> T`` the result
        is the returned value's type."""
        self.close_op()
        (tok, ins, ret, attrs), region = c
        if ret is None:
            last = region.blocks[0].last
            ret = last.operands[0].type if (isinstance(last, ReturnOp)
                                            and len(last.operands) == 1) else T.incomplete
        return self.make_op(FnOp, (), [T.FunctionType(ins, [ret])], attrs or None, [region], tok)

    def relay_loop_carry(self, c):
        """``relay_loop_carry: "," VALUE "=" VALUE``: a carried value's
        name in the body and its initial value (read in the outer scope)."""
        return (c[0], self.use(c[1]))

    def relay_loop_header(self, c):
        """``relay_loop_header: RELAY_LOOP "(" VALUE "<" INT relay_loop_carry* ")"
        [":" type]``: the body sees the enclosing scope and ends in ``yield``."""
        from ...parser.builder import _int_literal
        tok, index, count = c[0], c[1], _int_literal(self, c[2])
        carries = [x for x in c[3:] if type(x) is tuple]
        args = [(index, T.TensorType((), T.i64))] + [(name, v.type) for name, v in carries]
        self.open_op(terminators={"yield": YieldOp}, args=args)
        return (tok, count, [v for _, v in carries], _split_type(c, 3))

    def relay_loop(self, c):
        """``relay_loop: relay_loop_header region``: without a type the
        result is what the body yields, carried values then stacked outputs."""
        self.close_op()
        (tok, count, inits, rtype), region = c
        op = self.make_op(LoopOp, inits, [T.incomplete], {"trip_count": count}, [region], tok)
        try:
            want = op.infer_types()[0]
            if rtype is not None and want.is_complete and rtype != want:
                raise op.error(f"result type {rtype} does not match the body's {want}")
        except DiagnosticError:
            op.drop_operands()
            raise
        op.results = [OpResult(rtype or want, op, 0)]
        return op

    # -- algebraic data types ---------------------------------------------------------

    def relay_adt_ctor(self, c):
        """``relay_adt_ctor: RELAY_CTOR ["(" type ("," type)* ")"]``."""
        return (c[0], [x for x in c[1:]])

    def relay_adt(self, c):
        """``relay_adt: RELAY_ADT SYMBOL ["<" BARE_ID ("," BARE_ID)* ">"]
        "{" [relay_adt_ctor ("," relay_adt_ctor)*] "}"``; its constructors
        become known to the rest of the parse."""
        tok, sym = c[0], c[1]
        params, ctors, seen = [], {}, {}
        for x in c[2:]:
            if type(x) is tuple:
                ctok, fields = x
                if str(ctok) in seen:
                    raise self.err(ctok, f"constructor '{ctok}' is defined twice in @{symbol_name(sym)}")
                seen[str(ctok)] = ctok
                ctors[str(ctok)] = tuple(fields)
            else:
                params.append(str(x))
        attrs = {"sym_name": symbol_name(sym), "type_params": tuple(params),
                 "constructors": FrozenDict(ctors)}
        op = self.make_op(AdtOp, (), (), attrs, (), tok)
        for name, ctok in seen.items():
            prev = self._relay_adts(name)
            if prev is not None:
                raise DiagnosticError(self.loc(ctok), f"constructor '{name}' is already defined by "
                                      f"@{prev.attributes['sym_name']}", [(prev.loc, "the first definition is here")])
        self._relay_adts.add(op)
        return op

    def _adt_of(self, tok):
        d = self._relay_adts(str(tok))
        if d is None:
            raise self.err(tok, f"unknown constructor '{tok}' (define its relay.adt before the functions "
                                "that use it)")
        return d

    def relay_construct(self, c):
        """``relay_construct: RELAY_CTOR [VALUE_LIST] [":" type]``; the type
        defaults to what the arguments determine, ``?`` if they do not (yet)."""
        tok = c[0]
        d = self._adt_of(tok)
        args = self.uses_in(c[1]) if len(c) > 1 and not isinstance(c[1], T.Type) else []
        rtype = _split_type(c, 1)
        op = self.make_op(ConstructOp, args, (), {"constructor": str(tok)}, (), tok)
        try:
            op._check_arity(d)
            if rtype is None:
                rtype, why = d.construct_type(str(tok), [v.type for v in args])
                if rtype is None:
                    if why and all(v.type.is_complete for v in args):
                        raise op.error(why)
                    rtype = T.incomplete
        except DiagnosticError:
            op.drop_operands()
            raise
        op.results = [OpResult(rtype, op, 0)]
        return op

    # -- match ------------------------------------------------------------------------

    def relay_match_header(self, c):
        """``relay_match_header: RELAY_MATCH VALUE [":" type] "{"``: the
        scrutinee is kept for typing the arms' binders."""
        tok = c[0]
        m = (tok, self.use(c[1]), _split_type(c, 2))
        self._relay_matches.append(m)
        return m

    # relay_pattern: RELAY_CTOR ["(" relay_pattern ("," relay_pattern)* ")"]  -> relay_pat_ctor
    #     | VALUE -> relay_pat_var | RELAY_WILD -> relay_pat_wild
    #     | "(" relay_pattern ("," relay_pattern)* ")" -> relay_pat_tuple
    def relay_pat_var(self, c):
        return P.Pat(P.VAR, tok=c[0])

    def relay_pat_wild(self, c):
        return P.Pat(P.WILD, tok=c[0])

    def relay_pat_ctor(self, c):
        return P.Pat(P.CTOR, str(c[0]), c[1:], tok=c[0])

    def relay_pat_tuple(self, c):
        return P.Pat(P.TUPLE, subs=c, tok=c[0].tok)

    def relay_arm_head(self, c):
        """``relay_arm_head: relay_pattern "=>"``: type the pattern's binders
        against the scrutinee and make them the arm region's arguments (an
        error points at the sub-pattern that cannot match)."""
        pat = c[0]
        value = self._relay_matches[-1][1]

        def fail(p, msg):
            raise self.err(p.tok, msg)
        types = P.binder_types(pat, value.type, self._relay_adts, fail)
        toks = []
        _binder_tokens(pat, toks)
        self.open_op(args=list(zip(toks, types)), terminators={"yield": YieldOp})
        return pat

    def relay_arm(self, c):
        """``relay_arm: relay_arm_head region``."""
        self.close_op()
        return (c[0], c[1])

    def relay_match(self, c):
        """``relay_match: relay_match_header relay_arm* "}"``; ``match?`` is
        partial (not checked for exhaustiveness)."""
        tok, value, rtype = c[0]
        self._relay_matches.pop()
        arms = c[1:]
        attrs = {"patterns": tuple(p.to_attr() for p, _ in arms)}
        if tok.endswith("?"):
            attrs["partial"] = UNIT
        op = self.make_op(MatchOp, [value], (), attrs, [r for _, r in arms], tok)
        self._set_branch_type(op, rtype, "arm")
        return op


def _yields(op):
    out = []
    for r in op.regions:
        last = r.blocks[0].last if len(r.blocks) == 1 else None
        if isinstance(last, YieldOp) and len(last.operands) == 1:
            out.append(last)
    return out


def _binder_tokens(p, out):
    if p.kind == P.VAR:
        out.append(p.tok)
    for s in p.subs:
        _binder_tokens(s, out)
