"""``tvmd.relay`` as classic TVM's ``tvm.relay``: expression builders, every
relay op as a function, transforms, build and the graph executor.

    from tvmd import relay
    x = relay.var("x", shape=(1, 3, 32, 32))
    y = relay.nn.relu(relay.nn.conv2d(x, relay.var("w", shape=(8, 3, 3, 3)), padding=(1, 1)))
    mod = tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(y), y))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params={"w": w})
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))

Every op of the relay dialect is a function here under TVM's name
(``relay.add``, ``relay.nn.conv2d``, ``relay.image.resize2d``): its
operands first, then its attributes by position in the order the op
declares them (TVM's order) or by keyword.  Modules: ``expr`` (the
expressions and their emission), ``transform`` (passes), ``build``
(relay.build, the graph executor, create_executor), ``frontend``.
"""

from __future__ import annotations

from . import analysis, frontend, transform
from .build import build, create_executor
from .expr import (Any, Call, Constant, Expr, FuncType, Function, If, Let, Tuple, TupleGetItem, TupleType, TensorType, Var,
                   const, var)
from .scope_builder import ScopeBuilder


class _Ops:
    """The relay ops under a prefix (``relay.nn.``...) as functions."""

    def __init__(self, prefix):
        self._prefix = prefix

    def __getattr__(self, name):
        fn = op_function(self._prefix + name)
        if fn is None:
            raise AttributeError(f"relay has no op '{self._prefix}{name}'")
        return fn


nn = _Ops("nn.")
image = _Ops("image.")
qnn = _Ops("qnn.")
vision = _Ops("vision.")
dyn = _Ops("dyn.")


def op_function(name):
    """relay op `name` as ``f(*operands, *attrs_in_order, **attrs)``, or None."""
    from ...ir.core import OP_CLASSES
    from ...ir.registry import load_dialect
    load_dialect("relay")
    cls = OP_CLASSES.get("relay." + name)
    if cls is None or name in ("call", "func", "return", "constant"):
        return None
    declared = list(cls.OPERANDS or ())
    variadic = any(d.startswith("*") for d in declared)
    fixed = [d for d in declared if not d.startswith("*")]
    attr_names = list(cls.ATTRS)

    rest_name = next((d.lstrip("*") for d in declared if d.startswith("*")), None)

    def f(*args, **kwargs):
        args = list(args)
        given = dict(zip(fixed, args))      # operands in declared order, then the variadic one
        args = args[len(given):]
        rest = args.pop(0) if variadic and args else None
        if len(args) > len(attr_names):
            raise TypeError(f"relay.{name} takes at most {len(fixed) + len(attr_names)} positional arguments")
        attrs = dict(zip(attr_names, args))
        for k, v in kwargs.items():
            if k in fixed or k == rest_name:
                if k in given or (k == rest_name and rest is not None):
                    raise TypeError(f"relay.{name} got operand '{k}' twice")
                if k == rest_name:
                    rest = v
                else:
                    given[k] = v
            else:
                attrs[k] = v
        operands = [given[d] for d in fixed if d in given]
        if rest is not None:
            operands += list(rest.fields if isinstance(rest, Tuple) else rest) \
                if isinstance(rest, (list, tuple, Tuple)) else [rest]
        operands = [o if isinstance(o, Expr) else const(o) for o in operands]
        return Call(name, operands, attrs)
    f.__name__ = name.split(".")[-1]
    f.__qualname__ = f"relay.{name}"
    f.__doc__ = f"relay.{name}({', '.join(declared + attr_names)})"
    return f


def __getattr__(name):
    fn = op_function(name)
    if fn is None:
        raise AttributeError(f"module 'tvmd.relay' has no attribute '{name}'")
    return fn
