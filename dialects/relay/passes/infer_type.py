"""--infer-type: whole-module type inference and checking (TVM's InferType).

Relay types flow forward: an op's result type is a function of its operand
types and attributes (each op's ``type_relation``), and a call's result is
its callee's declared or inferred result.  So inference is:

1. Order the module's relay functions callees-first: an iterative DFS over
   the references between them (``call @f`` and ``constant @f``, anywhere
   in a body, regions included), so a function can use one defined later
   in the file.  A recursive cycle is fine when the function's result type
   is declared; otherwise nothing could ever give that type, and the
   reference is an error.
2. Walk each function body once, in SSA order, entering regions where they
   are: an op with regions is typed after its regions.  Every op's result
   type is recomputed; a ``?`` result takes the computed type, a declared
   one must equal it (the language ops, whose declared types may be less
   precise than their contents, need it only compatible: ``tensor<?xf32>``
   for an ``if`` whose branches yield ``tensor<4xf32>``).

   * ``if`` / ``match``: the join of what the branches / arms yield; a
     ``match`` arm's binders first take the types its pattern gives them
     from the matched value's type;
   * ``fn``: ``(params) -> returned type``; ``call %f``: the result of
     %f's function type; ``constant @f``: @f's type;
   * a constructor: the ADT type its arguments determine.

3. The function's ``function_type`` results take the returned value types
   (a declared result type must match them).

Linear in the module size: one visit per op and per reference.  Every error
is a DiagnosticError at the op that is wrong (a yield, a return, a call).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir import symbols
from ....ir import types as T
from ....ir.pass_manager import ModulePass
from ..ops.adt import ConstructOp, MatchOp
from ..ops.base import RelayOp
from ..ops.closure import CallIndirectOp, FnOp, FuncRefOp
from ..ops.control import IfOp, YieldOp
from ..ops.loop import LoopOp
from ..ops.function import CallOp, FuncOp, ReturnOp

# ops whose declared result may be less precise than the inferred one
_LANGUAGE_OPS = (IfOp, MatchOp, FnOp, CallIndirectOp, ConstructOp, LoopOp)
_REFERENCES = (CallOp, FuncRefOp)


@dataclass
class InferType(ModulePass):
    """Infer and check the type of every relay value.

    Fills every ``?`` type in relay functions and checks the declared ones.
    A whole-module pass: a callee's types are inferred before its callers'."""

    NAME = "infer-type"
    OP = "builtin.module"

    def run(self, module, ctx):
        n = infer_module(module)
        ctx.stat(self, "types-inferred", n)


def infer_module(module) -> int:
    """Infer types of every relay.func in `module`; returns how many types
    were filled in."""
    from ..ops.adt import adt_table
    body = module.regions[0].blocks[0]
    table = {op.attributes["sym_name"]: op for op in body.ops
             if isinstance(op.attributes.get("sym_name"), str)}
    funcs = [op for op in body.ops if isinstance(op, FuncOp)]
    state: dict = {}   # func -> "active" while on the DFS stack, "done" after
    filled = 0
    with symbols.caching():
        adts = adt_table(module)
        for root in funcs:
            if root in state:
                continue
            # iterative DFS: (func, iterator over the references in its body)
            stack = [(root, _references_in(root))]
            state[root] = "active"
            while stack:
                func, refs = stack[-1]
                pushed = False
                for ref in refs:
                    callee = table.get(ref.attributes["callee"].name)
                    if not isinstance(callee, FuncOp):
                        continue  # a missing callee is reported in the body walk
                    s = state.get(callee)
                    if s is None:
                        state[callee] = "active"
                        stack.append((callee, _references_in(callee)))
                        pushed = True
                        break
                    if s == "active" and not _results_known(callee):
                        verb = "calls" if isinstance(ref, CallOp) else "refers to"
                        raise ref.error(f"{verb} @{callee.attributes['sym_name']} recursively, so its result "
                                        "type cannot be inferred; declare it with '-> type'")
                if pushed:
                    continue
                stack.pop()
                filled += infer_function(func, table, adts)
                state[func] = "done"
    return filled


def _references_in(func):
    return iter([op for op in func.walk(include_self=False) if isinstance(op, _REFERENCES)])


def _results_known(func) -> bool:
    return all(t.is_complete for t in func.attributes["function_type"].results)


def infer_function(func, table=None, adts=None) -> int:
    """Infer and check one relay.func whose callees are already done."""
    ft = func.attributes["function_type"]
    body = func.regions[0].blocks[0]
    from ..types import type_vars_in
    for a in body.args:
        if not a.type.is_complete:
            raise func.error(f"parameter #{a.index} has no type; relay parameters must be typed")
        tv = type_vars_in(a.type, set())
        if tv:
            raise func.error(f"parameter #{a.index} has type {a.type}: !{sorted(tv)[0]} is a type parameter, "
                             "and only a relay.adt has them (functions are not polymorphic)")
    if adts is None:
        from ..ops.adt import adt_table
        adts = adt_table(func)
    inf = _Inferrer(table, adts)
    inf.block(body)
    ret = body.last
    if not isinstance(ret, ReturnOp):
        raise func.error("body must end with 'relay.return'")
    return inf.filled + _infer_return(func, ft, ret)


class _Inferrer:
    """One walk over a function body; `filled` counts the types set."""

    def __init__(self, table, adts):
        self.table = table
        self.adts = adts
        self.filled = 0

    def block(self, block):
        for op in block.ops:
            self.op(op)

    def op(self, op):
        if isinstance(op, (ReturnOp, YieldOp)):
            return   # checked by the op that owns the region
        for i, v in enumerate(op.operands):
            if not v.type.is_complete:
                raise op.error(f"operand #{i} has an unknown type")
        language = isinstance(op, _LANGUAGE_OPS)
        if isinstance(op, CallOp):
            want = self.call(op)
        elif language or isinstance(op, FuncRefOp):
            want = self.language_op(op)
        elif isinstance(op, RelayOp):
            want = op.infer_types()
        else:
            return   # another dialect's op: nothing relay can say about it
        for r, w in zip(op.results, want):
            if not w.is_complete:
                raise op.error("result type cannot be inferred")
            if not r.type.is_complete:
                r.type = w
                self.filled += 1
            elif r.type is not w and not language:
                raise op.error(f"result type {r.type} does not match the inferred type {w}")
        if language or isinstance(op, (CallOp, FuncRefOp)):
            # arguments, yields and returns against the (now known) types
            if isinstance(op, (MatchOp, ConstructOp)):
                op.verify_(self.adts)
            else:
                op.verify_()

    def call(self, op):
        from ..ops.function import callee_type
        callee = self.table.get(op.callee) if self.table is not None else None
        if callee is None:
            callee = op.resolve()
        if callee is None:
            raise op.error(f"'@{op.callee}' does not reference a function in this module")
        cft = callee_type(callee)
        if cft is None:
            raise op.error(f"'@{op.callee}' is a '{callee.name}', not a function")
        if len(cft.results) != len(op.results):
            raise op.error(f"@{op.callee} returns {len(cft.results)} value(s) but the call has "
                           f"{len(op.results)} result(s)")
        return list(cft.results)

    def language_op(self, op):
        if isinstance(op, MatchOp):
            for region, types in zip(op.regions, op.binder_types(self.adts)):
                for a, t in zip(region.blocks[0].args, types):
                    if not a.type.is_complete and t.is_complete:
                        a.type = t
                        self.filled += 1
        if isinstance(op, LoopOp):
            for a, v in zip(op.carried, op.operands):
                if not a.type.is_complete and v.type.is_complete:
                    a.type = v.type
                    self.filled += 1
        if isinstance(op, ConstructOp):
            # a written type stands (Nil's cannot be read off its arguments)
            r = op.results[0].type
            return [r] if r.is_complete else op.infer_types(self.adts)
        for r in op.regions:
            for b in r.blocks:
                self.block(b)
        return op.infer_types()


def _infer_return(func, ft, ret) -> int:
    got = [v.type for v in ret.operands]
    if len(got) != len(ft.results):
        raise ret.error(f"returns {len(got)} value(s) but the function type has {len(ft.results)} result(s)")
    new = []
    filled = 0
    for i, (g, w) in enumerate(zip(got, ft.results)):
        if not w.is_complete:
            new.append(g)
            filled += 1
        elif g is not w:
            raise ret.error(f"type of return operand {i} ({g}) doesn't match function result type ({w}) "
                            f"in function @{func.attributes['sym_name']}", notes=[(func.loc, "function defined here")])
        else:
            new.append(w)
    if filled:
        func.attributes["function_type"] = T.FunctionType(ft.inputs, new)
    return filled


def has_incomplete_types(module) -> bool:
    """Whether any relay function still has a ``?`` type (result, signature,
    or a value anywhere in its body, regions included)."""
    body = module.regions[0].blocks[0]
    for func in body.ops:
        if not isinstance(func, FuncOp):
            continue
        if not func.attributes["function_type"].is_complete:
            return True
        for op in func.walk(include_self=False):
            for r in op.results:
                if not r.type.is_complete:
                    return True
            for reg in op.regions:
                for b in reg.blocks:
                    for a in b.args:
                        if not a.type.is_complete:
                            return True
    return False


def ensure_types(module):
    """Run inference when anything is untyped: passes that read types (fusion
    patterns, layouts, folding) require it, as TVM's passes require InferType."""
    if has_incomplete_types(module):
        infer_module(module)
