"""The relay reference interpreter: the numerical oracle for every relay pass.

    from tvmd.dialects.relay.interpreter import run_function
    y = run_function(module, "main", x, w)        # numpy in, numpy out

Values: a tensor is a numpy array, a tuple a Python tuple, an ADT value a
:class:`ConValue` (``Cons(h, Nil)``), a function value a :class:`Closure`.

Algorithm: each block runs forward in SSA order with an environment
``Value -> value``:

* ``relay.constant``  -> its DenseAttr's array;
* any other relay op  -> ``op.compute(*operand values)`` (each op class
  defines its meaning on numpy arrays), checked against the op's result type;
* ``relay.call`` / ``call %f`` -> the callee's body, in a new environment
  (a closure's starts from the values it captured);
* ``relay.if``        -> the branch the scalar condition picks;
* ``relay.loop``      -> the body trip_count times, carried values threaded
                         through, per-step outputs stacked (np.stack);
* ``relay.match``     -> the first arm whose pattern matches, its binders bound;
* ``relay.fn``        -> a Closure holding the values its body uses from outside;
* ``relay.return`` / ``relay.yield`` -> the value of the function / region.

Recursion is what loops are in Relay, so calls must nest deeply: a block
runs as a Python generator that *yields* the blocks it needs run (a callee's
body, a branch) to a driver loop with an explicit stack and is sent their
results back.  Python's own stack stays flat however deep the relay
recursion goes; ``MAX_CALL_DEPTH`` bounds it (a recursion without end).

Everything a user can get wrong (a missing function, wrong argument shapes,
an op with no compute, a call to a te/tir kernel, a match no arm covers,
unbounded recursion) is a DiagnosticError located at the op responsible.
"""

from __future__ import annotations

from ...ir.diagnostics import DiagnosticError
from ...ir.lazy import lazy_module
from ...ir.location import UNKNOWN
from ...ir import types as T
from ...ir.types import TensorType, TupleType, to_numpy_dtype
from .ops.base import RelayOp
from .ops.adt import ConstructOp, MatchOp
from .ops.closure import CallIndirectOp, FnOp, FuncRefOp
from .ops.control import IfOp, TupleGetItemOp, TupleOp, YieldOp
from .ops.function import CallOp, ConstantOp, FuncOp, ReturnOp
from .ops.loop import LoopOp
from .patterns import TUPLE, VAR, WILD, from_attr

np = lazy_module("numpy")

# Calls nested deeper than this are taken for a recursion without end.
MAX_CALL_DEPTH = 10000


class ConValue:
    """A value of an algebraic data type: constructor name and fields."""

    __slots__ = ("constructor", "fields")

    def __init__(self, constructor: str, fields=()):
        self.constructor = constructor
        self.fields = tuple(fields)

    def __eq__(self, other):
        if not isinstance(other, ConValue) or other.constructor != self.constructor:
            return False
        if len(self.fields) != len(other.fields):
            return False
        return all(_values_equal(a, b) for a, b in zip(self.fields, other.fields))

    __hash__ = None

    def __repr__(self):
        if not self.fields:
            return self.constructor
        return f"{self.constructor}({', '.join(map(repr, self.fields))})"


def _values_equal(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_values_equal(x, y) for x, y in zip(a, b))
    return a == b


class Closure:
    """A function value: a ``relay.fn`` with the outer values its body uses,
    or (``captured`` None) a global relay.func named by ``constant @f``."""

    __slots__ = ("op", "captured")

    def __init__(self, op, captured=None):
        self.op = op
        self.captured = captured

    def __repr__(self):
        if isinstance(self.op, FuncOp):
            return f"<function @{self.op.sym_name}>"
        return f"<closure at {self.op.loc.text()}>"


def make_list(items, cons="Cons", nil="Nil"):
    """A ``List`` value (Cons/Nil) holding `items`, first item first."""
    v = ConValue(nil)
    for x in reversed(list(items)):
        v = ConValue(cons, (x, v))
    return v


def list_items(v, cons="Cons"):
    """The items of a ``List`` value, first first (iterative: lists are long)."""
    out = []
    while v.constructor == cons:
        out.append(v.fields[0])
        v = v.fields[1]
    return out


def run_function(module, name: str, *args):
    """Run ``@name`` of `module` on `args` (numpy arrays, or the values above);
    returns one value, or a tuple when the function has several results."""
    interp = Interpreter(module)
    func = interp.functions.get(name)
    if func is None:
        raise DiagnosticError(getattr(module, "loc", UNKNOWN), f"no function named '@{name}' in the module")
    if not isinstance(func, FuncOp):
        raise func.error("is not a relay.func; only relay functions can be interpreted")
    results = interp.call(func, args, None)
    return results[0] if len(results) == 1 else tuple(results)


def evaluate_op(op, arrays):
    """The value of one relay op (not a call) on numpy `arrays`, checked
    against the op's declared result type."""
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
    return conform(op, out, rtype, "computed")


def conform(op, value, t, what):
    """`value` as a value of type `t`: tensors become numpy arrays of its
    shape and dtype (else an error at `op`), tuples are checked field by
    field, other values are taken as they are."""
    if type(t) is TensorType:
        arr = value if type(value) is np.ndarray else np.asarray(value)
        check_array(op, arr, t, what)
        return arr
    if type(t) is TupleType and isinstance(value, (tuple, list)) and len(value) == len(t.types):
        return tuple(conform(op, v, et, what) for v, et in zip(value, t.types))
    return value


def check_array(op, arr, t, what):
    """Raise at `op` unless `arr` has the shape and dtype of tensor type `t`
    (a ``?`` dimension takes any size)."""
    if not isinstance(t, TensorType):
        return
    want_dtype = _DTYPES.get(t.element_type)
    if want_dtype is None:
        try:
            want_dtype = _DTYPES[t.element_type] = t.dtype
        except TypeError:
            return
    shape = getattr(arr, "shape", None)
    if shape is None:
        raise op.error(f"{what} {_describe(arr)}, but the type is {t}")
    shape_ok = len(shape) == len(t.shape) and all(w is None or w == g for g, w in zip(shape, t.shape))
    if not shape_ok or arr.dtype != want_dtype:
        raise op.error(f"{what} an array of shape {list(shape)} and dtype {arr.dtype}, "
                       f"but the type is {t}")


_DTYPES: dict = {}   # element type -> numpy dtype, for check_array


def _describe(v):
    if isinstance(v, ConValue):
        return f"the value {v!r}"
    if isinstance(v, Closure):
        return "a function value"
    return f"a {type(v).__name__}"


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
        self._free: dict = {}   # relay.fn op -> the outer values its body uses

    # -- the driver ------------------------------------------------------------------

    def call(self, func, args, call_op):
        """Run relay.func `func` on `args`; `call_op` is the op that asked
        (None at the top), where argument errors are reported.  Returns the
        list of results.  At the top, bf16 tensors cross as their bits
        (uint16, the runtime's form) and are ml_dtypes' bfloat16 inside."""
        results = self._drive(self._enter(func, args, call_op))
        if call_op is None:
            results = [_storage(r) for r in results]
        return results

    def _drive(self, root):
        """Run generator `root` and every block it asks for, on an explicit
        stack.  A frame yields ``(generator, is_call, op)`` to have a block
        run and is sent back its result."""
        stack = [root]
        calls = [True]   # per frame: does it count as a call?
        depth = 1
        value = None
        while True:
            try:
                req = stack[-1].send(value)
            except StopIteration as stop:
                stack.pop()
                if calls.pop():
                    depth -= 1
                if not stack:
                    return stop.value
                value = stop.value
                continue
            gen, op_is_call, op = req
            if op_is_call:
                depth += 1
                if depth > MAX_CALL_DEPTH:
                    raise op.error(f"call depth exceeds {MAX_CALL_DEPTH}: the recursion does not end")
            stack.append(gen)
            calls.append(op_is_call)
            value = None

    def _enter(self, func, args, where):
        """The body of relay.func `func` as a frame, arguments bound."""
        where = where if where is not None else func
        body = func.regions[0].blocks[0]
        params = body.args
        if len(args) != len(params):
            raise where.error(f"@{func.sym_name} takes {len(params)} argument(s), got {len(args)}")
        env = {}
        for i, (p, a) in enumerate(zip(params, args)):
            env[p] = conform(where, _as_value(a, p.type), p.type, f"argument {i} of @{func.sym_name} is")
        return self._block(body, env, ReturnOp, func)

    def _enter_closure(self, clo, args, where):
        if clo.captured is None:
            return self._enter(clo.op, args, where)
        fn = clo.op
        params = fn.regions[0].blocks[0].args
        if len(args) != len(params):
            raise where.error(f"calls a closure of {len(params)} parameter(s) with {len(args)} argument(s)")
        env = dict(clo.captured)
        for i, (p, a) in enumerate(zip(params, args)):
            env[p] = conform(where, a, p.type, f"argument {i} of the closure is")
        return self._block(fn.regions[0].blocks[0], env, ReturnOp, fn)

    # -- blocks ------------------------------------------------------------------------

    def _block(self, block, env, terminator, owner):
        """A generator running `block`; returns the values of its terminator."""
        for op in block.ops:
            if isinstance(op, terminator):
                return [env[v] for v in op.operands]
            args = [env[v] for v in op.operands]
            if not isinstance(op, _SPECIAL):
                if op.regions:
                    raise op.error("has regions the relay interpreter does not know how to run")
                env[op.results[0]] = evaluate_op(op, args)
            elif isinstance(op, CallOp):
                callee = self._callee(op)
                out = (yield (self._enter(callee, args, op), True, op))
                env[op.results[0]] = self._one_result(op, out, f"@{op.callee}")
            elif isinstance(op, CallIndirectOp):
                clo = args[0]
                if not isinstance(clo, Closure):
                    raise op.error(f"calls {_describe(clo)}, which is not a function")
                out = (yield (self._enter_closure(clo, args[1:], op), True, op))
                env[op.results[0]] = self._one_result(op, out, "the function")
            elif isinstance(op, IfOp):
                region = op.regions[0] if _truth(op, args[0]) else op.regions[1]
                out = (yield (self._block(region.blocks[0], env, YieldOp, op), False, op))
                env[op.results[0]] = conform(op, out[0], op.results[0].type, "yielded")
            elif isinstance(op, MatchOp):
                region, bound = self._select_arm(op, args[0])
                for a, v in zip(region.blocks[0].args, bound):
                    env[a] = v
                out = (yield (self._block(region.blocks[0], env, YieldOp, op), False, op))
                env[op.results[0]] = conform(op, out[0], op.results[0].type, "yielded")
            elif isinstance(op, LoopOp):
                carried, per_step = list(args), []
                body = op.body
                for i in range(op.trip_count):
                    env[op.index] = np.array(i, np.int64)
                    for a, v in zip(op.carried, carried):
                        env[a] = v
                    out = (yield (self._block(body, env, YieldOp, op), False, op))
                    carried = out[:len(carried)]
                    per_step.append(out[len(carried):])
                rt = op.results[0].type
                stacked = [np.stack([s[j] for s in per_step]) if per_step
                           else np.zeros(t.shape, to_numpy_dtype(t.element_type))
                           for j, t in enumerate(rt.types[len(carried):])]
                env[op.results[0]] = conform(op, (*carried, *stacked), rt, "computed")
            elif isinstance(op, FnOp):
                env[op.results[0]] = Closure(op, {v: env[v] for v in self._free_values(op)})
            elif isinstance(op, FuncRefOp):
                env[op.results[0]] = Closure(self._callee(op))
            elif isinstance(op, ConstructOp):
                env[op.results[0]] = ConValue(op.attributes["constructor"], args)
            else:
                # tuples hold any values, not only arrays: closures, ADT values
                out = tuple(args) if isinstance(op, TupleOp) else _project(op, args[0])
                env[op.results[0]] = conform(op, out, op.results[0].type, "computed")
        raise owner.error(f"a block does not end with '{terminator.name.split('.')[1]}'")

    def _callee(self, op):
        name = op.attributes["callee"].name
        callee = self.functions.get(name)
        if callee is None:
            from ...ir.symbols import lookup_symbol
            callee = lookup_symbol(op, name)
        if callee is None:
            raise op.error(f"'@{name}' does not reference a function in this module")
        if not isinstance(callee, FuncOp):
            raise op.error(f"calls '@{name}', a '{callee.name}'; the relay interpreter only runs "
                           "relay functions")
        return callee

    def _one_result(self, op, results, what):
        if len(results) != 1:
            raise op.error(f"{what} returns {len(results)} values but the call has one result")
        rtype = op.results[0].type
        return conform(op, results[0], rtype, "returned") if rtype.is_complete else results[0]

    def _select_arm(self, op, value):
        for region, attr in zip(op.regions, op.attributes["patterns"]):
            bound = []
            if _matches(from_attr(attr), value, bound):
                return region, bound
        raise op.error(f"no arm matches the value {_short(value)}")

    def _free_values(self, fn):
        """The values `fn`'s body uses that are defined outside it (what a
        closure captures); computed once per op."""
        free = self._free.get(fn)
        if free is None:
            inside = set()
            used = []
            for o in fn.walk(include_self=False):
                inside.update(o.results)
                for r in o.regions:
                    for b in r.blocks:
                        inside.update(b.args)
                used.extend(o.operands)
            for b in fn.regions[0].blocks:
                inside.update(b.args)
            seen = set()
            free = []
            for v in used:
                if v not in inside and v not in seen:
                    seen.add(v)
                    free.append(v)
            self._free[fn] = free
        return free


# the ops _block runs itself; every other op is evaluate_op's
_SPECIAL = (CallOp, CallIndirectOp, IfOp, LoopOp, MatchOp, FnOp, FuncRefOp, ConstructOp, TupleOp, TupleGetItemOp)


def _project(op, t):
    i = op.attributes["index"]
    if not isinstance(t, tuple) or not -len(t) <= i < len(t):
        raise op.error(f"cannot take item {i} of {_describe(t)}")
    return t[i]


def _matches(p, value, bound) -> bool:
    k = p.kind
    if k == VAR:
        bound.append(value)
        return True
    if k == WILD:
        return True
    if k == TUPLE:
        return (isinstance(value, tuple) and len(value) == len(p.subs)
                and all(_matches(s, v, bound) for s, v in zip(p.subs, value)))
    return (isinstance(value, ConValue) and value.constructor == p.name and len(value.fields) == len(p.subs)
            and all(_matches(s, v, bound) for s, v in zip(p.subs, value.fields)))


def _truth(op, cond) -> bool:
    c = np.asarray(cond)
    if c.size != 1:
        raise op.error(f"condition has {c.size} elements; it must be a scalar")
    return bool(c.reshape(()))


def _short(v, limit=80):
    s = repr(v)
    return s if len(s) <= limit else s[:limit] + "..."


def _storage(v):
    """A result as the runtime returns it (T.as_storage), tuples field by field."""
    return tuple(_storage(x) for x in v) if isinstance(v, tuple) else T.as_storage(v)


def _as_value(a, t):
    """An argument as a relay value: Python scalars and lists take a tensor
    parameter's dtype (arrays must already have it); other values (tuples,
    ADT values, closures) are taken as they are."""
    if type(t) is not TensorType:
        return a
    if isinstance(a, np.ndarray):
        return T.as_values(a, t)     # bf16 bits, as the runtime passes them, as values
    try:
        return np.asarray(a, dtype=t.dtype)
    except (TypeError, AttributeError):
        return np.asarray(a)
