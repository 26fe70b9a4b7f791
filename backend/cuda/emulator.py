"""Run the CUDA launcher without a GPU: a stand-in for pycuda's driver whose
kernels are the tir interpreter.

    from tvmd.backend.cuda.emulator import emulate
    lib = emulate(module_op)          # the same object build() returns, minus the GPU
    lib["softmax"](A, R)

Everything :mod:`.runner` does -- host/device split, argument marshalling,
device buffers of a host function, launch configuration and its limits --
runs as on a GPU; only the kernel body is interpreted (its thread-bound
loops run in lockstep across barriers, see
:mod:`tvmd.dialects.tir.interpreter`).  Each launch checks that the grid and
block it is given are the extents of the kernel's own thread loops, and
records (kernel, grid, block) in ``launches``.  For tests and for checking
numerics where there is no GPU; not fast.
"""

from __future__ import annotations

import numpy as np

from ...dialects.tir.ops import ForOp


class DevicePtr:
    def __init__(self, nbytes):
        self.data = np.zeros(nbytes, np.uint8)
        self.freed = False

    def free(self):
        self.freed = True


class _Context:
    @staticmethod
    def synchronize():
        pass


class FakeDriver:
    """mem_alloc, memcpy_htod, memcpy_dtoh and Context.synchronize over numpy."""

    Context = _Context

    def __init__(self):
        self.allocated = []

    def mem_alloc(self, nbytes):
        d = DevicePtr(nbytes)
        self.allocated.append(d)
        return d

    def memcpy_htod(self, d, a):
        b = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
        d.data[:b.size] = b

    def memcpy_dtoh(self, a, d):
        flat = a.reshape(-1).view(np.uint8)
        flat[:] = d.data[:flat.size]


def thread_extents(func_op):
    """(grid, block) from the kernel's thread loops, the largest static
    extent per tag (an independent reading of what codegen plans)."""
    ext = {}
    for op in func_op.walk(include_self=False):
        if isinstance(op, ForOp) and op.attributes.get("kind") == "thread":
            tag = op.attributes["thread"]
            n = op.static_extent
            if n is not None and tag != "vthread":
                ext[tag] = max(ext.get(tag, 0), n)

    def axes(prefix):
        return tuple(ext.get(f"{prefix}.{a}", 1) for a in "xyz")
    return axes("blockIdx"), axes("threadIdx")


class InterpretedKernel:
    def __init__(self, func_op, launches):
        from ...dialects.tir.interpreter import Program
        from ..abi import signature
        self.func = func_op
        self.program = Program(func_op)
        self.sig = signature(func_op)
        self.launches = launches

    def __call__(self, *kargs, grid, block):
        sig = self.sig
        loops = [op for op in self.func.walk(include_self=False)
                 if isinstance(op, ForOp) and op.attributes.get("kind") == "thread"]
        if all(op.static_extent is not None for op in loops):
            want = thread_extents(self.func)
            if (tuple(grid), tuple(block)) != want:
                raise AssertionError(f"@{sig.name} launched with grid={grid} block={block}, "
                                     f"its thread loops need grid={want[0]} block={want[1]}")
        self.launches.append((sig.name, tuple(grid), tuple(block)))
        dims = {(p.buffer, p.axis): int(v) for p, v in zip(sig.params[len(sig.declared):],
                                                               kargs[len(sig.declared):])}
        args = []
        for i, (p, v) in enumerate(zip(sig.declared, kargs)):
            if p.kind != "buffer":
                args.append(int(v) if p.dtype == "int64" else v)
                continue
            shape = tuple(d if d is not None else dims[(i, ax)] for ax, d in enumerate(p.shape))
            dt = np.dtype(p.dtype)
            n = int(np.prod(shape)) * dt.itemsize
            args.append(v.data[:n].view(dt).reshape(shape))
        self.program(*args)


def emulate(module_op, target="cuda"):
    """A :class:`~tvmd.backend.cuda.runner.CudaModule` whose kernels run on the
    tir interpreter; ``.launches`` lists what was launched, ``.source`` is the
    CUDA C a GPU would compile."""
    from ..llvm.codegen import tir_funcs
    from .codegen import is_host, prepare
    from .runner import CudaModule, split
    m = prepare(module_op)
    source, kernels, hosts = split(m, target)
    funcs = {f.sym_name: f for f in tir_funcs(m) if not is_host(f)}
    launches = []
    fns = {k.symbol or k.name: InterpretedKernel(funcs[k.name], launches) for k in kernels}
    lib = CudaModule(fns, kernels, hosts, FakeDriver())
    lib.launches = launches
    lib.source = source
    lib.module = m
    return lib
