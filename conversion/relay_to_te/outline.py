"""Outlining: relay ops outside primitive functions get one each.

    relay.func @main(%x: T) -> T {              relay.func @fused_nn_relu(%x: T) -> T attributes {primitive} {
      %r = nn.relu(%x) : T              =>        %r = nn.relu(%x) : T
      return %r                                   return %r
    }                                           }
                                                relay.func @main(%x: T) -> T {
                                                  %r = call @fused_nn_relu(%x) : T
                                                  return %r
                                                }

so that lowering without --fuse-ops still gives one kernel per op.  A
``loop`` stays, and the ops of its body are outlined in turn.
Constant operands move into the new function with the op (and leave the
caller when nothing else there uses them).
"""

from __future__ import annotations

from ...ir import types as T
from ...ir.attributes import UNIT, SymbolRef
from ...ir.core import Block, Region
from ...ir.symbols import unique_name


def kept_ops():
    """The op classes that stay where they are: calls, constants, returns,
    and tuples and get_item (the executor builds and takes apart the tuples
    that kernels with several results (batch_norm, split) return)."""
    from ...dialects.relay.ops.control import TupleGetItemOp, TupleOp
    from ...dialects.relay.ops.function import CallOp, ConstantOp, ReturnOp
    return (CallOp, ConstantOp, ReturnOp, TupleOp, TupleGetItemOp)


def outline_loose_ops(module) -> int:
    from ...dialects.relay.ops.function import CallOp, FuncOp, ReturnOp
    from ...dialects.relay.ops.loop import LoopOp
    keep = kept_ops()
    taken = {op.attributes.get("sym_name") for op in module.body.ops}
    n = 0
    for f in [op for op in module.body.ops if isinstance(op, FuncOp) and "primitive" not in op.attributes]:
        for op in [op for block in _loop_blocks(f.body) for op in list(block.ops)]:
            if isinstance(op, keep) or isinstance(op, LoopOp) or not op.results:
                continue
            name = unique_name(taken, "fused_" + op.name[len("relay."):].replace(".", "_"))
            taken.add(name)
            args = list(dict.fromkeys(v for v in op.operands if not _is_constant(v)))
            body = Block([v.type for v in args], [v.name for v in args])
            mapping = dict(zip(args, body.args))
            for v in op.operands:
                if _is_constant(v) and v not in mapping:
                    c = v.defining_op().clone()
                    body.append(c)
                    mapping[v] = c.results[0]
            inner = op.clone(mapping)
            body.append(inner)
            body.append(ReturnOp(list(inner.results), [], {}, (), op.loc))
            ft = T.FunctionType([v.type for v in args], [r.type for r in op.results])
            new = FuncOp((), (), {"sym_name": name, "function_type": ft, "primitive": UNIT},
                         [Region([body])], op.loc)
            module.body.insert_before(f, new)
            call = CallOp(args, [r.type for r in op.results], {"callee": SymbolRef(name)}, (), op.loc)
            op.parent.insert_before(op, call)
            for old, r in zip(op.results, call.results):
                r.name = old.name
                old.replace_all_uses_with(r)
            op.erase()
            for v in mapping:   # a constant the op took with it may now be dead here
                if _is_constant(v) and not v.uses:
                    v.defining_op().erase()
            n += 1
    return n


def _loop_blocks(block):
    """`block` and the bodies of the loops in it, nested ones included."""
    from ...dialects.relay.ops.loop import LoopOp
    yield block
    for op in block.ops:
        if isinstance(op, LoopOp):
            yield from _loop_blocks(op.body)


def _is_constant(v):
    from ...dialects.relay.ops.function import ConstantOp
    return isinstance(v.defining_op(), ConstantOp)
