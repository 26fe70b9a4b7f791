"""Classic Relay expressions in Python, emitted as the relay dialect.

    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.const(np.ones((4, 3, 3, 3), "float32"))
    y = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1), channels=4, kernel_size=(3, 3)))
    f = relay.Function([x], y)
    mod = tvm.IRModule.from_expr(f)          # relay.func @main, types inferred
    print(mod)                               # the relay dialect text

An expression is a small Python DAG (Var, Constant, Call, Tuple,
TupleGetItem, Function); nothing is built until a Function is emitted into
a module, where each node becomes one relay op (shared nodes once) and the
op's type relation checks it.  ``str(expr)`` emits a function over the
expression's free variables and prints it: the text is the truth.
"""

from __future__ import annotations

import numpy as np

from ..expr import TVMError


class TensorType:
    """``relay.TensorType(shape, dtype)``."""

    def __init__(self, shape, dtype="float32"):
        self.shape = tuple(None if isinstance(d, Any) or d is None or d == -1 else int(d) for d in shape)
        self.dtype = str(dtype)

    def to_ir(self):
        from ...ir import types as T
        return T.TensorType(self.shape, T.from_dtype_name(self.dtype))

    def __repr__(self):
        return f"TensorType({list(self.shape)}, {self.dtype})"


class Any:
    """``relay.Any()``: a dimension known at run time (``?``)."""


class TupleType:
    """``relay.TupleType([t, ...])``."""

    def __init__(self, fields):
        self.fields = list(fields)

    def to_ir(self):
        from ...ir import types as T
        return T.TupleType(tuple(f.to_ir() for f in self.fields))


class FuncType:
    """``relay.FuncType([arg types], ret_type)``: the type of a closure
    (``(tensor<4xf32>) -> tensor<4xf32>`` in the dialect)."""

    def __init__(self, arg_types, ret_type, type_params=None, type_constraints=None):
        if type_params:
            raise TVMError("relay.FuncType: type parameters (polymorphic functions) are not supported "
                           "by this Python layer; write them in the relay dialect text")
        self.arg_types, self.ret_type = list(arg_types), ret_type

    def to_ir(self):
        from ...ir import types as T
        return T.FunctionType([a.to_ir() for a in self.arg_types], [self.ret_type.to_ir()])


class Expr:
    """A relay expression; arithmetic operators build calls as TVM's do."""

    def __add__(self, other):
        return _call("add", self, _wrap(other, self))

    def __radd__(self, other):
        return _call("add", _wrap(other, self), self)

    def __sub__(self, other):
        return _call("subtract", self, _wrap(other, self))

    def __rsub__(self, other):
        return _call("subtract", _wrap(other, self), self)

    def __mul__(self, other):
        return _call("multiply", self, _wrap(other, self))

    def __rmul__(self, other):
        return _call("multiply", _wrap(other, self), self)

    def __truediv__(self, other):
        return _call("divide", self, _wrap(other, self))

    def __neg__(self):
        return _call("negative", self)

    def __getitem__(self, i):
        return TupleGetItem(self, i)

    def astuple(self):
        return self

    @property
    def checked_type(self):
        """The inferred type, as the relay dialect prints it."""
        module, (value,) = emit_values([self])
        return value.type

    def __str__(self):
        free = free_vars(self)
        return str(Function(free, self))

    astext = __str__


class Var(Expr):
    def __init__(self, name_hint, type_annotation):
        self.name_hint = name_hint
        self.type_annotation = type_annotation

    def __repr__(self):
        return f"Var({self.name_hint}, {self.type_annotation})"


class Constant(Expr):
    def __init__(self, data):
        self.data = np.asarray(data)


class Call(Expr):
    """An op's call (`op` its name), or a call of a function value (`op` an
    expression: a closure, a function-typed var), emitted as
    relay.call_indirect."""

    def __init__(self, op, args, attrs=None, type_args=None, span=None):
        if type_args:
            raise TVMError("relay.Call: type_args are not supported (relay functions here are monomorphic)")
        self.op, self.args, self.attrs = op, list(args), dict(attrs or {})
        self.loc = _caller_loc()

    def __repr__(self):
        return f"Call({self.op}, {len(self.args)} args)"


class Tuple(Expr):
    def __init__(self, fields):
        self.fields = list(fields)

    def __getitem__(self, i):
        return self.fields[i]

    def __len__(self):
        return len(self.fields)


class TupleGetItem(Expr):
    def __init__(self, tuple_value, index):
        self.tuple_value, self.index = tuple_value, int(index)


class Let(Expr):
    """``relay.Let(var, value, body)``: `body` with `var` bound to `value`
    (emitted as SSA: the var names the value's result)."""

    def __init__(self, variable, value, body):
        self.var, self.value, self.body = variable, value, body


class If(Expr):
    """``relay.If(cond, true_branch, false_branch)``: a relay.if with the
    branches in its two regions; `cond` is a scalar bool."""

    def __init__(self, cond, true_branch, false_branch):
        self.cond, self.true_branch, self.false_branch = cond, true_branch, false_branch


class Function(Expr):
    """``relay.Function(params, body)``: emitted as a relay.func; nested in
    another function's body it is a closure (relay.fn), whose body may read
    the enclosing function's values."""

    def __init__(self, params, body, ret_type=None, type_params=None, attrs=None):
        self.params, self.body = list(params), body

    def __str__(self):
        from ...ir.printer import print_module
        return print_module(function_module(self))


def var(name_hint, type_annotation=None, shape=None, dtype="float32"):
    """``relay.var("x", shape=(1, 3), dtype="float32")`` or with a TensorType."""
    if type_annotation is None:
        if shape is None:
            return Var(name_hint, None)    # a let's variable: its type is its value's
        type_annotation = TensorType(shape, dtype)
    elif isinstance(type_annotation, str):
        type_annotation = TensorType(shape or (), type_annotation)
    return Var(name_hint, type_annotation)


def const(value, dtype=None):
    """``relay.const(1.0)``, ``relay.const(array)``: a Python float is float32, as in TVM."""
    arr = np.asarray(value, dtype=dtype)
    if dtype is None and arr.dtype == np.float64:
        arr = arr.astype(np.float32)
    if dtype is None and arr.dtype == np.int64 and not isinstance(value, np.ndarray):
        arr = arr.astype(np.int32)    # TVM's const(1) is int32
    return Constant(arr)


def _caller_loc():
    """The user's line that built an expression (the first frame outside
    tvmd), so a type error points at the script."""
    import sys

    from ...ir.location import UNKNOWN, FileLoc
    f = sys._getframe(2)
    while f is not None and f.f_globals.get("__name__", "").split(".")[0] == "tvmd":
        f = f.f_back
    return UNKNOWN if f is None else FileLoc(f.f_code.co_filename, f.f_lineno, 1)


def _wrap(v, like):
    if isinstance(v, Expr):
        return v
    return const(v)


def _call(op, *args, **attrs):
    return Call(op, args, attrs)


def free_vars(expr):
    """The Vars `expr` reads, in first-use order (``relay.analysis.free_vars``)."""
    seen, out, stack = set(), [], [expr]
    bound = set()
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, Var):
            out.append(e)
        elif isinstance(e, Call) and isinstance(e.op, Expr):
            stack.extend(reversed([e.op] + _children(e)))
        elif isinstance(e, Function):
            bound.update(id(p) for p in e.params)
            stack.append(e.body)
        elif isinstance(e, Let):
            bound.add(id(e.var))
            stack += [e.body, e.value]
        elif isinstance(e, If):
            stack += [e.false_branch, e.true_branch, e.cond]
        else:
            stack.extend(reversed(_children(e)))
    return [v for v in out if id(v) not in bound]


def _children(e):
    """The sub-expressions emitted before `e` (a Function's body is not one:
    it is emitted inside the closure's region)."""
    if isinstance(e, Call):
        callee = [e.op] if isinstance(e.op, Expr) else []
        return callee + [a for a in e.args if isinstance(a, Expr)] + \
            [x for a in e.args if isinstance(a, (list, tuple)) for x in a if isinstance(x, Expr)]
    if isinstance(e, Tuple):
        return e.fields
    if isinstance(e, TupleGetItem):
        return [e.tuple_value]
    return []


# -- emission --------------------------------------------------------------------------

def function_module(func, name="main"):
    """A builtin.module holding `func` as ``relay.func @name``."""
    from ...dialects.builtin.ops import ModuleOp
    module = ModuleOp.create_empty()
    module.body.append(emit_function(func, name))
    return module


def emit_values(exprs):
    """Emit `exprs` as a function over their free variables; returns the
    module and the relay values of `exprs`."""
    free = []
    for e in exprs:
        free += [v for v in free_vars(e) if v not in free]
    from ...dialects.builtin.ops import ModuleOp
    module = ModuleOp.create_empty()
    func, values = _emit(Function(free, Tuple(exprs)), "main", keep=exprs)
    module.body.append(func)
    return module, values


def emit_function(func, name):
    f, _ = _emit(func, name)
    return f


def _emit(func, name, keep=()):
    """(relay.func op, relay values of `keep`) for Function `func`; a Tuple
    body is several results (what a graph executor's outputs are)."""
    from ...dialects.relay.ops.function import FuncOp, ReturnOp
    from ...ir import types as T
    from ...ir.builder import Builder
    from ...ir.core import Block, Region
    from ...ir.diagnostics import DiagnosticError
    missing = free_vars(func)
    if missing:
        raise TVMError(f"the function reads variable(s) that are not its parameters: "
                       f"{', '.join(v.name_hint for v in missing)}")
    block = Block()
    env = {}
    _add_params(func, block, env)
    b = Builder.at_end(block)
    fields = func.body.fields if isinstance(func.body, Tuple) else [func.body]
    try:
        results = [_value(f, b, env) for f in fields]
    except DiagnosticError as e:
        from ..build import _render
        raise TVMError(_render(e)) from None
    from ...ir.location import UNKNOWN
    block.append(ReturnOp(results, (), None, (), UNKNOWN))
    ft = T.FunctionType([a.type for a in block.args], [r.type for r in results])
    f = FuncOp((), (), {"sym_name": name, "function_type": ft}, [Region([block])], UNKNOWN)
    return f, [env[id(e)] for e in keep]


def _add_params(func, block, env):
    for p in func.params:
        if not isinstance(p, Var):
            raise TVMError(f"a Function's parameters are relay.var()s, got {type(p).__name__}")
        if p.type_annotation is None:
            raise TVMError(f"parameter '{p.name_hint}' has no type: give relay.var shape= and dtype=, "
                           "a TensorType or a FuncType")
        env[id(p)] = block.add_arg(p.type_annotation.to_ir(), p.name_hint)


def _value(expr, b, env):
    """The relay value of `expr` (emitted once; iterative post-order, so a
    deep network does not hit Python's recursion limit)."""
    stack = [(expr, False)]
    while stack:
        e, ready = stack.pop()
        if id(e) in env:
            continue
        kids = _children(e)
        if not ready and any(id(k) not in env for k in kids):
            stack.append((e, True))
            stack.extend((k, False) for k in kids if id(k) not in env)
            continue
        env[id(e)] = _emit_one(e, b, env)
    return env[id(expr)]


def _emit_one(e, b, env):
    from ...dialects.relay.ops.function import ConstantOp
    from ...ir.attributes import DenseAttr
    from ...ir import types as T
    if isinstance(e, Var):
        raise TVMError(f"free variable '{e.name_hint}': make it a parameter of the Function")
    if isinstance(e, Constant):
        arr = np.array(e.data, order="C")   # (ascontiguousarray would make a 0-d value 1-d)
        op = ConstantOp.get(DenseAttr(arr, T.TensorType(arr.shape, T.from_numpy_dtype(arr.dtype))))
        b.insert(op)
        return op.results[0]
    if isinstance(e, Tuple):
        return _build(b, "tuple", [env[id(f)] for f in e.fields], {})
    if isinstance(e, TupleGetItem):
        return _build(b, "get_item", [env[id(e.tuple_value)]], {"index": e.index})
    if isinstance(e, Call):
        operands = []
        for a in e.args:
            if isinstance(a, (list, tuple)):
                operands += [env[id(x)] for x in a]
            else:
                operands.append(env[id(a)])
        if isinstance(e.op, Expr):
            return _call_value(env[id(e.op)], operands, e, b)
        return _build(b, e.op, operands, e.attrs, e.loc)
    if isinstance(e, Let):
        while isinstance(e, Let):    # a chain of lets iterates (ScopeBuilder makes long ones)
            v = env[id(e.var)] = _value(e.value, b, env)
            _check_let_type(e.var, v)
            e = e.body
        return _value(e, b, env)
    if isinstance(e, If):
        return _emit_if(e, b, env)
    if isinstance(e, Function):
        return _emit_closure(e, b, env)
    raise TVMError(f"not a relay expression: {type(e).__name__}")


def _emit_closure(e, b, env):
    """relay.fn: the parameters are its block's arguments, the body is
    emitted inside (reading the enclosing values it captures)."""
    from ...dialects.relay.ops.closure import FnOp
    from ...dialects.relay.ops.function import ReturnOp
    from ...ir import types as T
    from ...ir.builder import Builder
    from ...ir.core import Block, Region
    from ...ir.location import UNKNOWN
    block = Block()
    inner = dict(env)
    _add_params(e, block, inner)
    v = _value(e.body, Builder.at_end(block), inner)
    block.append(ReturnOp([v], (), None, (), UNKNOWN))
    ft = T.FunctionType([a.type for a in block.args], [v.type])
    op = FnOp((), (), {}, [Region([block])], UNKNOWN)
    from ...ir.core import OpResult
    op.results = [OpResult(ft, op, 0)]
    b.insert(op)
    return op.results[0]


def _call_value(callee, operands, e, b):
    """relay.call_indirect of a function value; its type is checked here,
    where the user's line is known."""
    from ...dialects.relay.ops.closure import CallIndirectOp
    from ...ir.diagnostics import DiagnosticError
    try:
        op = CallIndirectOp.build(callee, *operands, loc=e.loc)
        op.verify_()
    except DiagnosticError as err:
        from ..build import _render
        raise TVMError(_render(err)) from None
    b.insert(op)
    return op.results[0]


def _check_let_type(variable, value):
    from ...dialects.relay.types import compatible
    want = variable.type_annotation
    if want is not None and not compatible(value.type, want.to_ir()):
        raise TVMError(f"relay.Let: '{variable.name_hint}' is annotated {want.to_ir()} but its value has "
                       f"type {value.type}")


def _emit_if(e, b, env):
    """relay.if: the condition here, each branch in its own region (it may
    read the values above; what it makes stays inside)."""
    from ...dialects.relay.ops.control import IfOp, YieldOp
    from ...ir.builder import Builder
    from ...ir.core import Block, Region
    from ...ir.location import UNKNOWN
    cond = _value(e.cond, b, env)
    regions = []
    for branch in (e.true_branch, e.false_branch):
        block = Block()
        v = _value(branch, Builder.at_end(block), dict(env))
        block.append(YieldOp([v], (), None, (), UNKNOWN))
        regions.append(Region([block]))
    op = IfOp.build(cond, regions=regions, loc=UNKNOWN)
    b.insert(op)
    return op.results[0]


def _build(b, name, operands, attrs, loc=None):
    from ...ir import types as T
    from ...ir.core import OP_CLASSES
    cls = OP_CLASSES.get("relay." + name)
    if cls is None:
        raise TVMError(f"relay has no op '{name}'")
    given = {}
    for k, v in attrs.items():
        if v is None:
            continue
        if k not in cls.ATTRS:
            raise TVMError(f"relay.{name} has no attribute '{k}' (it has: {', '.join(cls.ATTRS) or 'none'})")
        if isinstance(v, np.ndarray):
            v = v.tolist()
        if isinstance(v, list):
            v = tuple(v)
        if isinstance(v, np.generic):
            v = v.item()
        kind = cls.ATTRS[k].kind.name
        if kind == "type" and isinstance(v, str):
            v = T.from_dtype_name(v)
        elif kind == "float" and isinstance(v, int):
            v = float(v)
        given[k] = v
    from ...ir.location import UNKNOWN
    op = cls.build(*operands, loc=loc or UNKNOWN, **given)
    b.insert(op)
    return op.results[0]
