"""--infer-type: whole-module type inference and checking (TVM's InferType).

Relay types flow forward: an op's result type is a function of its operand
types and attributes (each op's ``type_relation``), and a call's result is
its callee's declared or inferred result.  So inference is:

1. Order the module's relay functions callees-first: an iterative DFS over
   the call graph, so a function can call one defined later in the file.
   A recursive cycle is fine when the function's result type is declared;
   otherwise nothing could ever give that type, and the call is an error.
2. Walk each function body once, in SSA order.  Every relay op's result type
   is recomputed; a ``?`` result takes the computed type, a declared one must
   equal it.  Calls take the callee's result type and check the arguments.
3. The function's ``function_type`` results take the returned value types
   (a declared result type must match them).

Linear in the module size: one visit per op and per call edge.  Every error
is a DiagnosticError at the op that is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir import symbols
from ....ir import types as T
from ....ir.pass_manager import ModulePass
from . import RELAY_FUNC


@dataclass
class InferType(ModulePass):
    """Fill every ``?`` type in relay functions and check the declared ones."""

    NAME = "infer-type"

    def run(self, module, ctx):
        n = infer_module(module)
        ctx.stat(self, "types-inferred", n)


def infer_module(module) -> int:
    """Infer types of every relay.func in `module`; returns how many result
    types were filled in."""
    body = module.regions[0].blocks[0]
    table = {op.attributes["sym_name"]: op for op in body.ops
             if isinstance(op.attributes.get("sym_name"), str)}
    funcs = [op for op in body.ops if op.name == RELAY_FUNC]
    state: dict = {}   # func -> "active" while on the DFS stack, "done" after
    filled = 0
    with symbols.caching():
        for root in funcs:
            if root in state:
                continue
            # iterative DFS: (func, iterator over the calls in its body)
            stack = [(root, _calls_in(root))]
            state[root] = "active"
            while stack:
                func, calls = stack[-1]
                pushed = False
                for call in calls:
                    callee = table.get(call.attributes["callee"].name)
                    if callee is None or callee.name != RELAY_FUNC:
                        continue  # a missing callee is reported in the body walk
                    s = state.get(callee)
                    if s is None:
                        state[callee] = "active"
                        stack.append((callee, _calls_in(callee)))
                        pushed = True
                        break
                    if s == "active" and not _results_known(callee):
                        raise call.error(f"calls @{callee.attributes['sym_name']} recursively, so its result "
                                         "type cannot be inferred; declare it with '-> type'")
                if pushed:
                    continue
                stack.pop()
                filled += infer_function(func, table)
                state[func] = "done"
    return filled


def _calls_in(func):
    return iter([op for op in func.regions[0].blocks[0].ops if op.name == "relay.call"])


def _results_known(func) -> bool:
    return all(t.is_complete for t in func.attributes["function_type"].results)


def infer_function(func, table=None) -> int:
    """Infer and check one relay.func whose callees are already done."""
    from ..ops.base import RelayOp
    from ..ops.function import CallOp, callee_type

    ft = func.attributes["function_type"]
    body = func.regions[0].blocks[0]
    for a in body.args:
        if not a.type.is_complete:
            raise func.error(f"parameter #{a.index} has no type; relay parameters must be typed")
    filled = 0
    for op in body.ops:
        if op.name == "relay.return":
            return filled + _infer_return(func, ft, op)
        if not isinstance(op, RelayOp):
            continue
        for i, v in enumerate(op.operands):
            if not v.type.is_complete:
                raise op.error(f"operand #{i} has an unknown type")
        if isinstance(op, CallOp):
            callee = table.get(op.callee) if table is not None else None
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
            want = list(cft.results)
        else:
            want = op.infer_types()
        for r, w in zip(op.results, want):
            if not w.is_complete:
                raise op.error("result type cannot be inferred")
            if not r.type.is_complete:
                r.type = w
                filled += 1
            elif r.type is not w:
                raise op.error(f"result type {r.type} does not match the inferred type {w}")
        if isinstance(op, CallOp):
            op.verify_()   # argument count and types against the callee
    raise func.error("body must end with 'relay.return'")


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
    """Whether any relay function still has a ``?`` type (result or signature)."""
    body = module.regions[0].blocks[0]
    for func in body.ops:
        if func.name != RELAY_FUNC:
            continue
        if not func.attributes["function_type"].is_complete:
            return True
        for op in func.regions[0].blocks[0].ops:
            for r in op.results:
                if not r.type.is_complete:
                    return True
    return False


def ensure_types(module):
    """Run inference when anything is untyped: passes that read types (fusion
    patterns, layouts, folding) require it, as TVM's passes require InferType."""
    if has_incomplete_types(module):
        infer_module(module)
