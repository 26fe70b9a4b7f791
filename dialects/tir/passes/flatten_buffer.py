"""tir-flatten-buffer: n-d buffer accesses become 1-d, with the row-major
index arithmetic written out.

For a buffer of static shape (d0, ..., dk) an access ``%B[%i0, ..., %ik]``
becomes ``%B[%lin]`` with ``lin = (((i0 * d1) + i1) * d2 + ...) + ik``
(a rank-0 buffer is indexed by a constant 0), and the buffer's type becomes
``memref<(d0*...*dk)xT, scope>``.  ``vector<N>`` accesses keep their
meaning: N consecutive elements of the flattened buffer from the first
index, in the n-d and the 1-d form alike.

Which buffers:

* every ``tir.alloc`` (always static);
* function parameters only with ``flatten-params=true`` (default false),
  and only static ones: that changes the function's signature -- callers
  then pass 1-d (reshaped) arrays -- so it is for code that owns its
  callers.  Dynamic-shape parameters keep their form: their sizes are not
  values the access could use.

A buffer used by anything but loads and stores is left alone.  The result
is still ordinary tir: the interpreter and the LLVM codegen (which
linearises n-d accesses itself) run it unchanged; simplify folds the
constant multiplications.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir import types as T
from ....ir.pass_manager import ModulePass, option
from ....ir.rewriter import Rewriter
from ._util import binop, const, only_loaded_and_stored
from ..ops import AllocOp, LoadOp


def _flattenable(buf) -> bool:
    t = buf.type
    if not isinstance(t, T.MemRefType) or not t.is_static or t.rank == 1:
        return False
    return only_loaded_and_stored(buf)


def _flat_type(t):
    n = 1
    for d in t.shape:
        n *= d
    return T.MemRefType((n,), t.element_type, t.scope)


def linearize(rw, anchor, shape, indices):
    """The row-major linear index of `indices` into `shape`, as ops before `anchor`."""
    if not indices:
        return const(rw, anchor, 0)
    lin = indices[0]
    for d, i in zip(shape[1:], indices[1:]):
        lin = binop(rw, anchor, "arith.addi", binop(rw, anchor, "arith.muli", lin, const(rw, anchor, d)), i)
    return lin


def flatten(rw, buf, shape):
    """Rewrite every access to `buf` (whose old shape is `shape`) to 1-d."""
    for u in list(buf.uses):
        first = 1 if isinstance(u, LoadOp) else 2
        head, idx = list(u.operands[:first]), list(u.operands[first:])
        lin = linearize(rw, u, shape, idx)
        rw.modify(u, lambda o, ops=head + [lin]: o.set_operands(ops))


@dataclass
class FlattenBuffer(ModulePass):
    """Flatten n-d buffer accesses to 1-d."""

    NAME = "tir-flatten-buffer"
    OP = "tir.func"
    flatten_params: bool = option(False, "flatten the function's buffer parameters too (changes its signature)")

    def run_on(self, func, ctx):
        rw = Rewriter()
        n = 0
        if self.flatten_params:
            for a in func.buffer_args:
                if _flattenable(a):
                    shape = a.type.shape
                    a.type = _flat_type(a.type)   # the signature changes with it
                    flatten(rw, a, shape)
                    n += 1
        for op in list(func.walk(include_self=False)):
            if isinstance(op, AllocOp) and _flattenable(op.results[0]):
                old = op.results[0]
                new = type(op)((), [_flat_type(old.type)], dict(op.attributes), (), op.loc)
                new.results[0].name = old.name
                rw.insert_before(op, new)
                rw.replace_all_uses(old, new.results[0])
                rw.erase_op(op)
                flatten(rw, new.results[0], old.type.shape)
                n += 1
        if n:
            ctx.stat(self, "buffers-flattened", n)
