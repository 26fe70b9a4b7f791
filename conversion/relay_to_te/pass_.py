"""--lower-relay-to-te: each primitive relay function becomes a te.func.

    relay.func @fused_nn_dense_nn_relu(%x: T, %w: W) -> R attributes {primitive} { ... }
  =>
    te.func @fused_nn_dense_nn_relu(%x: T, %w: W) -> R { te.compute ...; schedule ops; return %r }

1. Relay ops left in non-primitive functions are outlined first, one
   primitive function each (outline.py), so a module that skipped
   --fuse-ops still lowers.
2. Each op of a primitive function becomes te.computes through the
   compute registered for its name (registry.py; the computes are in
   topi_*.py).  A splat (or single-element) relay.constant
   becomes an arith.constant in the bodies that read it; any other
   constant is lifted out: the te.func gets one more parameter, and each
   call passes a copy of the constant.
3. With ``schedule=true`` (the default) the default schedule for the
   target is appended: schedules.py for ``target="llvm"`` (the default),
   schedules_cuda.py for ``target="cuda"``.
4. With ``fallback=true`` a primitive function that cannot be lowered (an
   op without a TE compute, a dynamic shape, a strategy that rejects its
   attributes) stays a relay function, marked ``interpreted``, instead of
   failing the pass; the executor runs it with the ops' numpy ``compute()``.
   The statistic "functions left to the interpreter" counts them.

The te.func keeps the name, so ``call @f`` in the caller now calls it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.pass_manager import ModulePass, option


@dataclass
class LowerRelayToTE(ModulePass):
    """Lower each primitive relay function to a te function with a default schedule.

    A whole-module pass: loose relay ops are first outlined into new
    primitive functions, and each lowered function's constants are lifted."""

    NAME = "lower-relay-to-te"
    OP = "builtin.module"
    schedule: bool = option(True, "append the target's default schedule to each te function")
    target: str = option("llvm", "whose default schedules: llvm or cuda")
    fallback: bool = option(False, "leave a function that cannot be lowered to the interpreter "
                                   "(marked 'interpreted') instead of an error")

    def run(self, module, ctx):
        from ...dialects.relay.ops.function import FuncOp as RelayFuncOp
        from .outline import outline_loose_ops
        n = outline_loose_ops(module)
        if n:
            ctx.stat(self, "ops outlined", n)
        for f in [op for op in module.body.ops if isinstance(op, RelayFuncOp) and "primitive" in op.attributes
                  and "interpreted" not in op.attributes]:
            if self.fallback:
                if try_lower_function(module, f, self.schedule, self.target) is None:
                    ctx.stat(self, "functions left to the interpreter")
                    continue
            else:
                lower_function(module, f, self.schedule, self.target)
            ctx.stat(self, "functions lowered")


def try_lower_function(module, rf, schedule=True, target="llvm"):
    """lower_function, or None when `rf` cannot be lowered; `rf` is then
    marked ``interpreted`` (with the reason) and left as it was.  The te body
    is built aside and only swapped in at the end, so a failure leaves the
    module untouched."""
    from ...ir.diagnostics import DiagnosticError
    try:
        return lower_function(module, rf, schedule, target)
    except (DiagnosticError, NotImplementedError, ValueError, KeyError, TypeError) as e:
        msg = e.diagnostics[0].message if isinstance(e, DiagnosticError) else f"{type(e).__name__}: {e}"
        rf.attributes["interpreted"] = msg.split("; --lower-relay-to-te handles")[0]
        return None


def lower_function(module, rf, schedule=True, target="llvm"):
    from ...dialects.relay.ops.base import RelayOp
    from ...dialects.relay.ops.control import TupleGetItemOp, TupleOp
    from ...dialects.relay.ops.function import CallOp, ConstantOp
    from ...dialects.relay.ops.function import ReturnOp as RelayReturnOp
    from ...dialects.te.builder import Emitter, compute
    from ...dialects.te.ops import FuncOp, ReturnOp
    from ...dialects.relay.ops.qnn_math import ScaleError
    from ...ir import types as T
    from ...ir.core import Block, Region
    from .registry import Scalar, computes

    table = computes()

    from .dims import NoRule, is_dynamic, param_dims, result_dims

    params = rf.body.args
    body = Block([a.type for a in params], [a.name for a in params])
    e = Emitter(body, rf.loc)
    e.target = str(target).split()[0] if str(target).strip() else "llvm"   # a compute may differ per target
    e.target_spec = str(target).strip() or "llvm"
    e.func_name = rf.attributes["sym_name"]
    e.kernels = []   # tir.funcs of the te.externs a compute makes: into the module beside the te.func
    env = dict(zip(params, body.args))
    # the size parameter of each '?' of a parameter: (tensor position, axis) -> index arg
    sizes = {}
    dims_of = {}

    def size_param(i, a, ax):
        sizes[(i, ax)] = body.add_arg(T.index, f"{a.name or 'arg'}_d{ax}")
        return sizes[(i, ax)]
    for i, (p, a) in enumerate(zip(params, body.args)):
        if isinstance(p.type, T.TensorType):
            dims_of[p] = param_dims(p.type, lambda ax, i=i, a=a: size_param(i, a, ax))
    checks = []
    lifted = []
    outs = []
    for op in rf.body.ops:
        e.loc = op.loc
        if isinstance(op, RelayReturnOp):
            # a tuple (split, topk) returns its fields: the te.func has one result each
            outs = [x for v in op.operands for x in (env[v] if isinstance(env[v], tuple) else (env[v],))]
            break
        if isinstance(op, TupleOp):
            env[op.results[0]] = tuple(env[v] for v in op.operands)
            if any(v in dims_of for v in op.operands):
                dims_of[op.results[0]] = [dims_of.get(v) or tuple(v.type.shape) for v in op.operands]
            continue
        if isinstance(op, TupleGetItemOp):
            env[op.results[0]] = env[op.operands[0]][op.attributes["index"]]
            if op.operands[0] in dims_of:
                dims_of[op.results[0]] = dims_of[op.operands[0]][op.attributes["index"]]
            continue
        if isinstance(op, ConstantOp):
            attr = op.value
            r = op.results[0]
            if not is_lifted(op):
                env[r] = Scalar(attr.array.flat[0].item(), attr.type)
            else:
                env[r] = body.add_arg(attr.type, r.name if r.name and not r.name[0].isdigit() else "const")
                lifted.append(op)
            continue
        if isinstance(op, CallOp):
            raise op.error("a primitive function cannot call another function")
        fn = table.get(op.op_name if isinstance(op, RelayOp) else op.name)
        if fn is None:
            raise op.error(f"has no TE compute; --lower-relay-to-te handles {', '.join(sorted(table))}")
        for v in op.operands:
            if not isinstance(v.type, T.TensorType):
                raise op.error(f"te lowering needs tensor operands, got {v.type}")
        r = op.results[0]
        ins = [dims_of.get(v) or tuple(v.type.shape) for v in op.operands]
        if any(is_dynamic(d) for d in ins):
            try:
                dims_of[r], eqs = result_dims(op, ins, e)
                checks.extend(eqs)
                # a tuple's fields (split's pieces) share their '?' axes: the first sizes them all
                e.result_dims = dims_of[r][0] if isinstance(dims_of[r], list) else dims_of[r]
                e.operand_dims = ins
                env[r] = fn(e, op, [env[v] for v in op.operands])
            except NoRule as err:
                raise op.error(str(err)) from None
            except (TypeError, ValueError, AttributeError, NotImplementedError) as err:
                raise op.error(f"has dynamic dimensions its compute cannot size yet ({err})") from None
            e.result_dims = e.operand_dims = None
        else:
            try:
                env[r] = fn(e, op, [env[v] for v in op.operands])   # a tuple for a tuple-typed result
            except ScaleError as err:
                raise op.error(str(err)) from None
    for i, v in enumerate(outs):
        if isinstance(v, Scalar):   # a function returning a constant: fill a tensor with it
            outs[i] = compute(e, v.type, lambda e, *idx, v=v: e.const(v.value, v.type.element_type), name="const")
    e.loc = rf.loc
    if schedule:
        if sizes:
            if str(target).split()[0] == "cuda":
                raise rf.error("no CUDA schedule for dynamic ('?') dimensions yet")
            from .schedules import vector_unit
            from .schedules_dynamic import dynamic_schedule
            vu = vector_unit(str(target).strip() or "llvm")
            dynamic_schedule(e, outs, vu.lanes, vu.accumulators)
        else:
            default_schedule_for(target)(e, outs)
    body.append(ReturnOp(outs, [], {}, (), rf.loc))
    _hoist_sizes(body)
    attrs = {k: v for k, v in rf.attributes.items() if k not in ("primitive", "function_type")}
    if sizes:
        try:
            attrs.update(_size_params(body, sizes, checks, outs))
        except NoRule as err:
            raise rf.error(str(err)) from None
    attrs["function_type"] = T.FunctionType([a.type for a in body.args], [v.type for v in outs])
    tf = FuncOp((), (), attrs, [Region([body])], rf.loc)
    for k in e.kernels:
        rf.parent.insert_before(rf, k)
    rf.parent.insert_before(rf, tf)
    rf.erase()
    if lifted:
        _pass_lifted_constants(module, attrs["sym_name"], lifted)
    return tf


def _size_params(body, sizes, checks, outs):
    """Move the size parameters after the tensors (the caller passes the
    tensors; the runtime adds the sizes) and describe them for the runtime.
    A size is written ``[c, i1, a1, i2, a2, ...]``: c plus dimension a1 of
    tensor parameter i1 plus ...

    * ``size_args``: per size parameter, [tensor parameter, axis] it is
      the size of;
    * ``size_checks``: [size, size] pairs that must be equal;
    * ``result_sizes``: [result, axis, size] for each '?' of a result."""
    from ...dialects.te.ops import ComputeOp, ExternOp
    from .dims import NoRule
    index_args = set(sizes.values())
    body.args = [a for a in body.args if a not in index_args] + list(sizes.values())
    for k, a in enumerate(body.args):
        a.index = k
    where = {v: key for key, v in sizes.items()}

    def size(v):
        if type(v) is int:
            return [v]
        if v in where:
            return [0, *where[v]]
        d = v.defining_op()
        if d is not None and d.name == "arith.constant":
            return [int(d.attributes["value"])]
        if d is not None and d.name == "arith.addi":
            a, b = size(d.operands[0]), size(d.operands[1])
            return [a[0] + b[0]] + a[1:] + b[1:]
        raise NoRule("a size that is not a sum of the parameters' sizes")
    size_checks = [(size(a), size(b)) for a, b in checks]
    result_sizes = []
    for k, v in enumerate(outs):
        if v.type.is_static:
            continue
        d = v.defining_op()
        if not isinstance(d, (ComputeOp, ExternOp)):
            raise NoRule(f"result {k} ({v.type}) is not sized by the parameters' sizes")
        it = iter(d.operands if isinstance(d, ComputeOp) else d.result_sizes())
        for ax, n in enumerate(v.type.shape):
            if n is None:
                result_sizes.append((k, ax, size(next(it))))
    return {"size_args": tuple(tuple(key) for key in sizes), "size_checks": tuple(size_checks),
            "result_sizes": tuple(result_sizes)}


def _hoist_sizes(body):
    """The index arithmetic of sums of sizes (emitted where an op needed
    it) moves to the top of the function: it reads only parameters, and the
    storage of every stage, placed first, may need it."""
    first = next((op for op in body.ops if op.name.startswith("te.")), None)
    if first is None:
        return
    for op in list(body.ops):
        if op.name.startswith("arith.") and not op.regions:
            op.detach()
            body.insert_before(first, op)


def is_lifted(const_op) -> bool:
    """Whether a relay.constant in a primitive function becomes a parameter
    of its te.func (anything but a splat)."""
    attr = const_op.value
    return not (attr.size >= 1 and attr.is_splat())


def _pass_lifted_constants(module, name, consts):
    """Each call of @name passes copies of the lifted constants."""
    from ...dialects.relay.ops.function import CallOp
    for op in module.walk():
        if isinstance(op, CallOp) and op.attributes["callee"].name == name:
            copies = []
            for c in consts:
                cc = c.clone()
                op.parent.insert_before(op, cc)
                copies.append(cc.results[0])
            op.set_operands(list(op.operands) + copies)


def default_schedule_for(target):
    """The default-schedule function of a target kind ("llvm" or "cuda";
    a full target string such as "llvm -mcpu=skylake" works too)."""
    kind = str(target).split()[0] if str(target).strip() else "llvm"
    if kind == "cuda":
        from .schedules_cuda import default_schedule
        return default_schedule
    if kind == "llvm":
        from .schedules import default_schedule
        return lambda e, outs: default_schedule(e, outs, str(target).strip() or "llvm")
    raise ValueError(f"no default schedules for target '{target}' (have: llvm, cuda)")
