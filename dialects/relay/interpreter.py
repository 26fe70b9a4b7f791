"""The relay reference interpreter: the numerical oracle for every relay pass.

    from tvmd.dialects.relay.interpreter import run_function
    y = run_function(module, "main", x, w)        # numpy in, numpy out

Algorithm: a relay.func body is one block in SSA order, so executing it is a
single forward walk that keeps an environment ``Value -> ndarray``:

* ``relay.constant``  -> its DenseAttr's array;
* any other relay op  -> ``op.compute(*operand arrays)`` (each op class
  defines its meaning on numpy arrays), checked against the op's result type;
* ``relay.call``      -> a recursive run of the callee relay.func;
* ``relay.return``    -> the function's results.

Everything a user can get wrong (a missing function, wrong argument shapes,
an op with no compute, a call to a te/tir kernel, unbounded recursion) is a
DiagnosticError located at the op responsible.
"""

from __future__ import annotations

from ...ir.diagnostics import DiagnosticError
from ...ir.location import UNKNOWN

# Relay has no control flow, so any recursion never terminates; stop long
# before Python's own recursion limit would.
MAX_CALL_DEPTH = 200


def run_function(module, name: str, *arrays):
    """Run ``@name`` of `module` on numpy `arrays`; returns one array, or a
    tuple when the function has several results."""
    interp = Interpreter(module)
    func = interp.functions.get(name)
    if func is None:
        raise DiagnosticError(getattr(module, "loc", UNKNOWN), f"no function named '@{name}' in the module")
    if func.name != "relay.func":
        raise func.error("is not a relay.func; only relay functions can be interpreted")
    results = interp.call(func, arrays, None)
    return results[0] if len(results) == 1 else tuple(results)


def evaluate_op(op, arrays):
    """The value of one relay op (not a call) on numpy `arrays`, checked
    against the op's declared result type."""
    import numpy as np

    from .ops.base import RelayOp
    from .ops.function import CallOp, ConstantOp

    if isinstance(op, ConstantOp):
        return op.value.array
    if isinstance(op, CallOp):
        raise op.error("is a call; evaluate it with run_function or Interpreter.call")
    if not isinstance(op, RelayOp) or type(op).compute is RelayOp.compute:
        raise op.error("has no reference implementation (compute), so it cannot be interpreted")
    if len(op.results) != 1:
        raise op.error(f"has {len(op.results)} results; the interpreter handles single-result ops")
    rtype = op.results[0].type
    if not rtype.is_complete:
        raise op.error("has an uninferred result type; run --infer-type first")
    try:
        out = op.compute(*arrays)
    except DiagnosticError:
        raise
    except NotImplementedError:
        raise op.error("has no reference implementation (compute), so it cannot be interpreted") from None
    except Exception as e:  # a numpy failure: report it at the op, not as a traceback
        raise op.error(f"evaluation failed: {type(e).__name__}: {e}") from None
    out = np.asarray(out)
    check_array(op, out, rtype, "computed")
    return out


def check_array(op, arr, t, what):
    """Raise at `op` unless `arr` has the shape and dtype of tensor type `t`."""
    from ...ir.types import TensorType
    if not isinstance(t, TensorType):
        return
    try:
        want_dtype = t.dtype
    except TypeError:
        return
    shape_ok = len(arr.shape) == len(t.shape) and all(
        w is None or w == g for g, w in zip(arr.shape, t.shape))
    if not shape_ok or arr.dtype != want_dtype:
        raise op.error(f"{what} an array of shape {list(arr.shape)} and dtype {arr.dtype}, "
                       f"but the type is {t}")


class Interpreter:
    """Runs relay functions of one module; `functions` maps symbol -> op."""

    def __init__(self, module):
        self.module = module
        self.functions = {}
        body = module.regions[0].blocks[0] if module.regions else None
        if body is not None:
            for op in body.ops:
                name = op.attributes.get("sym_name")
                if isinstance(name, str):
                    self.functions[name] = op
        self.depth = 0

    def call(self, func, arrays, call_op):
        """Run relay.func `func` on `arrays`; `call_op` is the relay.call that
        asked (None at the top), where argument errors are reported."""
        where = call_op if call_op is not None else func
        body = func.regions[0].blocks[0]
        params = body.args
        if len(arrays) != len(params):
            raise where.error(f"@{func.sym_name} takes {len(params)} argument(s), got {len(arrays)}")
        env = {}
        for i, (p, a) in enumerate(zip(params, arrays)):
            arr = _as_array(a, p.type)
            check_array(where, arr, p.type, f"argument {i} of @{func.sym_name} is")
            env[p] = arr
        self.depth += 1
        if self.depth > MAX_CALL_DEPTH:
            raise where.error(f"call depth exceeds {MAX_CALL_DEPTH}: @{func.sym_name} recurses without end")
        try:
            for op in body.ops:
                name = op.name
                if name == "relay.return":
                    return [env[v] for v in op.operands]
                if op.regions:
                    raise op.error("has regions; the relay interpreter runs straight-line relay code only")
                args = [env[v] for v in op.operands]
                if name == "relay.call":
                    out = self.run_call(op, args)
                else:
                    out = evaluate_op(op, args)
                env[op.results[0]] = out
        finally:
            self.depth -= 1
        raise func.error("body does not end with 'return'")

    def run_call(self, op, args):
        callee = self.functions.get(op.callee)
        if callee is None:
            callee = op.resolve()
        if callee is None:
            raise op.error(f"'@{op.callee}' does not reference a function in this module")
        if callee.name != "relay.func":
            raise op.error(f"calls '@{op.callee}', a '{callee.name}'; the relay interpreter only runs "
                           "relay functions")
        results = self.call(callee, args, op)
        if len(results) != 1:
            raise op.error(f"@{op.callee} returns {len(results)} values but the call has one result")
        out = results[0]
        rtype = op.results[0].type
        if rtype.is_complete:
            check_array(op, out, rtype, "returned")
        return out


def _as_array(a, t):
    """numpy view of an argument; Python scalars and lists take the
    parameter's dtype, arrays must already have it."""
    import numpy as np
    if isinstance(a, np.ndarray):
        return a
    try:
        return np.asarray(a, dtype=t.dtype)
    except (TypeError, AttributeError):
        return np.asarray(a)
