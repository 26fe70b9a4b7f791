"""tir-split-host-device: outline GPU work into device kernels.

A tir.func that binds loops to GPU threads becomes either

* one kernel, in place, marked ``kernel`` -- when its work is a single
  top-level op (one thread-bound nest) and it allocates no global memory::

      tir.func @add(%A: memref<1024xf32>, %B: memref<1024xf32>) attributes {kernel} { ... }

* or a host function plus one kernel per top-level piece of work, when the
  work needs a grid-wide synchronisation between parts (several nests, at
  least one over ``blockIdx``: a block cannot wait for the other blocks), or
  when it allocates global memory (a kernel cannot)::

      tir.func @softmax_kernel0(%A: memref<4x10xf32>, %M: memref<4xf32>) attributes {kernel} { ... }
      tir.func @softmax_kernel1(...) attributes {kernel} { ... }
      tir.func @softmax(%A: memref<4x10xf32>, %R: memref<4x10xf32>) {
        %M = tir.alloc : memref<4xf32>
        "tir.launch"(%A, %M) {callee = @softmax_kernel0} : (memref<4x10xf32>, memref<4xf32>) -> ()
        "tir.launch"(%A, %M, %S) {callee = @softmax_kernel1} : (...) -> ()
        ...
      }

Algorithm, per function that has a thread-bound loop and no launch yet:
the top-level ops are split into host ops (``tir.alloc`` of global
buffers, pure ``arith`` ops) and work (everything else).  Each work op is
moved into a new function ``@<name>_kernel<i>``; the values it uses from
outside become parameters (read-only buffers first, then the buffers it
stores to -- its outputs --, then scalars) except constants, which are
copied in.  A work op with no thread binding (a serial nest) becomes a
kernel of one thread.  The host function keeps its signature, its
allocations and one ``tir.launch`` per kernel, in program order: a kernel
boundary is the grid-wide barrier.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir import types as T
from ....ir.pass_manager import ModulePass
from ...arith.ops import ArithOp, ConstantOp
from ..ops import AllocOp, ForOp, FuncOp, LaunchOp, StoreOp

HOST_SCOPES = ("global", None, "")


@dataclass
class SplitHostDevice(ModulePass):
    """Split thread-bound parts into device kernels.

    See the module docstring.

    A whole-module pass: each kernel becomes a new tir.func."""

    NAME = "tir-split-host-device"
    OP = "builtin.module"

    def run(self, module, ctx):
        for f in [op for op in module.body.ops if isinstance(op, FuncOp)]:
            n = split_function(f)
            if n:
                ctx.stat(self, "kernels outlined", n)


def is_thread_loop(op):
    return isinstance(op, ForOp) and op.attributes.get("kind") == "thread" \
        and op.attributes.get("thread") != "vthread"


def binds(op, prefix=""):
    return any(is_thread_loop(o) and o.attributes["thread"].startswith(prefix) for o in op.walk())


def _is_host_alloc(op):
    return isinstance(op, AllocOp) and getattr(op.results[0].type, "scope", None) in HOST_SCOPES


def _is_host_op(op):
    return _is_host_alloc(op) or (isinstance(op, ArithOp) and not op.regions)


def needs_split(f):
    """Does this function need a host part (see the module docstring)?"""
    ops = list(f.body.ops)
    work = [op for op in ops if not _is_host_op(op)]
    if any(_is_host_alloc(op) for op in ops):
        return True
    return len(work) > 1 and any(binds(op, "blockIdx") for op in work)


def split_function(f):
    """Split one tir.func in place; returns the number of kernels outlined
    (0 when the function is left as it is or only marked ``kernel``)."""
    from ....ir.attributes import UNIT
    if "kernel" in f.attributes or any(isinstance(op, LaunchOp) for op in f.walk()):
        return 0
    if not binds(f):
        return 0
    if not needs_split(f):
        f.attributes["kernel"] = UNIT
        return 0
    work = [op for op in f.body.ops if not _is_host_op(op)]
    for op in work:
        if isinstance(op, AllocOp):   # it would be outlined alone, away from its users
            scope = getattr(op.results[0].type, "scope", None)
            raise op.error(f"a '{scope}' allocation outside the thread loops: device memory is allocated "
                           f"inside the kernel (move it into the blockIdx loop that uses it)")
    taken = {op.sym_name for op in f.parent.ops if isinstance(op, FuncOp)}
    for i, w in enumerate(work):
        name = f"{f.sym_name}_kernel{i}"
        while name in taken:
            name += "_"
        taken.add(name)
        outline(f, w, name)
    for op in list(f.body.ops_reversed()):   # host index math only the kernels used
        if isinstance(op, ArithOp) and not any(r.uses for r in op.results):
            op.erase()
    return len(work)


def outline(f, work, name):
    """Move `work` (a top-level op of f) into a new kernel @name before f,
    and put a tir.launch in its place."""
    from ....ir.attributes import SymbolRef, UNIT
    from ....ir.core import Block, Region
    inside = set()
    for op in work.walk():
        inside.update(op.results)
        for r in op.regions:
            for b in r.blocks:
                inside.update(b.args)
    used, written = [], set()
    consts = []
    for op in work.walk():
        for v in op.operands:
            if v in inside or v in used or v in consts:
                continue
            d = v.defining_op()
            if isinstance(d, ConstantOp):
                consts.append(v)
            else:
                used.append(v)
        if isinstance(op, StoreOp):
            written.add(op.operands[1])
    bufs = [v for v in used if isinstance(v.type, T.MemRefType)]
    params = [v for v in bufs if v not in written] + [v for v in bufs if v in written] + \
             [v for v in used if not isinstance(v.type, T.MemRefType)]
    body = Block([v.type for v in params], [_name(v, k) for k, v in enumerate(params)])
    mapping = dict(zip(params, body.args))
    for c in consts:
        body.append(c.defining_op().clone(mapping))
    body.append(work.clone(mapping))
    attrs = {"sym_name": name, "num_outputs": sum(1 for v in bufs if v in written), "kernel": UNIT}
    kernel = FuncOp((), (), attrs, [Region([body])], work.loc)
    f.parent.insert_before(f, kernel)
    launch = LaunchOp(list(params), [], {"callee": SymbolRef(name)}, (), work.loc)
    f.body.insert_before(work, launch)
    work.erase()
    return kernel


def _name(v, k):
    n = v.name
    return n if n and not n[0].isdigit() else f"arg{k}"
