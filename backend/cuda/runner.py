"""Launch compiled CUDA kernels on numpy arrays through pycuda (optional).

    from tvmd.backend.cuda.runner import build
    lib = build(module_op, "cuda -arch=sm_90")   # prepare + codegen + compile + load
    lib["matmul"](A, B, C)                        # copies in, launches, copies outputs back

Importing this module does not import pycuda; :func:`build` says clearly
when pycuda or a GPU is missing (:class:`CudaUnavailable`).

What runs where:

* a kernel (a tir.func codegen emits) is called with the arguments of
  :mod:`tvmd.backend.abi`: buffers are copied to fresh device memory, the
  hidden dynamic dimensions are filled in from the arrays, grid and block
  come from the kernel's :class:`~tvmd.backend.cuda.codegen.KernelInfo`
  (:func:`launch_config`, checked against CUDA's limits), and the output
  buffers are copied back;
* a host function (made by ``tir-split-host-device``: allocations and
  ``tir.launch`` ops) is a :class:`HostPlan`: its arguments and
  allocations live on the device for the whole call and each launch runs
  its kernel on them, in order.

The marshalling (:func:`kernel_args`, :func:`launch_config`,
:func:`host_plan`) is plain Python; the driver is a parameter, so the tests
run the whole launcher with a stand-in driver whose kernels are the tir
interpreter.
"""

from __future__ import annotations

import numpy as np

from ...dialects.arith.ops import ConstantOp
from ...dialects.tir.ops import AllocOp, LaunchOp

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_STATIC_SHARED = 48 * 1024


class CudaUnavailable(RuntimeError):
    pass


class LaunchError(ValueError):
    pass


def _driver():
    try:
        import pycuda.autoinit  # noqa: F401  (creates a context on device 0)
        import pycuda.driver as drv
    except ImportError as e:
        raise CudaUnavailable(f"running CUDA kernels needs pycuda and a GPU ({e}); "
                              f"install with: pip install 'tvmd[cuda]'") from None
    except Exception as e:   # pycuda present, no device or driver
        raise CudaUnavailable(f"no usable CUDA device: {e}") from None
    return drv


# -- pure marshalling -------------------------------------------------------------

def launch_config(info, scalars):
    """(grid, block) as int triples for one launch of kernel `info`, with
    the ``index`` arguments in `scalars`; raises LaunchError past CUDA's limits."""
    grid, block = info.resolve(scalars)
    if any(x < 1 for x in grid + block):
        # an empty loop: nothing to launch; CUDA rejects a zero extent
        return None
    nthreads = block[0] * block[1] * block[2]
    if nthreads > MAX_THREADS_PER_BLOCK or any(b > m for b, m in zip(block, MAX_BLOCK)):
        raise LaunchError(f"@{info.name}: block {block} exceeds CUDA's limits "
                          f"({MAX_THREADS_PER_BLOCK} threads, {MAX_BLOCK})")
    if any(g > m for g, m in zip(grid, MAX_GRID)):
        raise LaunchError(f"@{info.name}: grid {grid} exceeds CUDA's limits {MAX_GRID}")
    if info.shared_bytes > MAX_STATIC_SHARED:
        raise LaunchError(f"@{info.name}: {info.shared_bytes} bytes of shared memory exceed "
                          f"the {MAX_STATIC_SHARED} a block may allocate statically")
    return grid, block


def kernel_args(sig, args, to_device):
    """The kernel's argument list for `args` (numpy arrays for buffers, numbers
    for scalars, in declaration order): ``to_device(i, array)`` gives the
    device pointer of buffer argument i; scalars become numpy scalars of
    their type; the hidden dynamic dimensions (``int64``) come last.
    Returns (kernel arguments, {scalar name: value})."""
    from ...runtime.ndarray import check_buffer
    declared = sig.declared
    if len(args) != len(declared):
        raise TypeError(f"@{sig.name} takes {len(declared)} argument(s), got {len(args)}")
    kargs, scalars, arrays = [], {}, {}
    for i, (p, a) in enumerate(zip(declared, args)):
        if p.kind == "buffer":
            check_buffer(a, p.dtype, p.shape, f"argument {i} ({p.name}) of @{sig.name}")
            arrays[i] = a
            kargs.append(to_device(i, a))
        else:
            v = np.array(a, dtype=p.dtype)[()]
            scalars[p.name] = v
            kargs.append(v)
    for p in sig.params[len(declared):]:
        kargs.append(np.int64(arrays[p.buffer].shape[p.axis]))
    return kargs, scalars


def host_plan(func_op):
    """The steps of a host function: ("alloc", slot, shape, dtype) and
    ("launch", kernel name, [slot, ...]); slots 0..n-1 are its arguments."""
    from ...ir import types as T
    slots = {a: i for i, a in enumerate(func_op.args)}
    steps = []
    for op in func_op.body.ops:
        if isinstance(op, AllocOp):
            t = op.results[0].type
            if not t.is_static:
                raise op.error(f"the CUDA host allocates static buffers only, got {t}")
            slots[op.results[0]] = len(slots)
            steps.append(("alloc", slots[op.results[0]], tuple(t.shape), T.to_numpy_dtype(t.element_type).name))
        elif isinstance(op, LaunchOp):
            missing = [v for v in op.operands if v not in slots]
            if missing:
                raise op.error("passes a value the host computes; the launcher takes only "
                               "arguments and allocations")
            steps.append(("launch", op.callee, [slots[v] for v in op.operands]))
        elif isinstance(op, ConstantOp):
            continue
        else:
            raise op.error("cannot run on the host: a host function holds allocations and "
                           "tir.launch ops (run --tir-split-host-device)")
    return steps


# -- launching ------------------------------------------------------------------

class Prepared:
    """One call's device state: ``run()`` launches (no copies, asynchronous),
    ``fetch()`` waits and copies the outputs back into the arrays,
    ``free()`` releases the device memory.  Calling a kernel or host
    function is prepare, run, fetch, free; a benchmark times ``run()``."""

    def __init__(self, drv, launches, copy_back, owned, result):
        self.drv = drv
        self.launches = launches     # [(CudaKernel, kernel args, scalars)]
        self.copy_back = copy_back   # [(array, device pointer)]
        self.owned = owned
        self.result = result

    def run(self):
        for k, kargs, scalars in self.launches:
            k.launch(kargs, scalars)

    def fetch(self):
        self.drv.Context.synchronize()
        for a, d in self.copy_back:
            self.drv.memcpy_dtoh(a, d)
        return self.result

    def free(self):
        for d in self.owned:
            d.free()
        self.owned = []


def _call(fn, args):
    p = fn.prepare(*args)
    try:
        p.run()
        return p.fetch()
    finally:
        p.free()


def _result(sig, args):
    outs = [args[i] for i in sig.outputs]
    return outs[0] if len(outs) == 1 else tuple(outs)


class CudaKernel:
    def __init__(self, function, info, drv):
        self.function = function
        self.info = info
        self.drv = drv

    def launch(self, kargs, scalars):
        cfg = launch_config(self.info, scalars)
        if cfg is not None:
            self.function(*kargs, grid=cfg[0], block=cfg[1])

    def prepare(self, *args):
        drv = self.drv
        owned, back = [], []

        def to_device(i, a):
            d = drv.mem_alloc(max(a.nbytes, 1))
            owned.append(d)
            drv.memcpy_htod(d, a)
            if a.flags.writeable:
                back.append((a, d))
            return d
        try:
            kargs, scalars = kernel_args(self.info.signature, args, to_device)
        except Exception:
            for d in owned:
                d.free()
            raise
        return Prepared(drv, [(self, kargs, scalars)], back, owned, _result(self.info.signature, args))

    def __call__(self, *args):
        return _call(self, args)


class HostFunction:
    """A host function: its buffers stay on the device between launches."""

    def __init__(self, func_op, kernels, drv):
        from ..abi import signature
        self.signature = signature(func_op)
        self.steps = host_plan(func_op)
        self.kernels = kernels
        self.drv = drv
        for s in self.steps:
            if s[0] == "launch" and s[1] not in kernels:
                raise KeyError(f"@{self.signature.name} launches @{s[1]}, which is not a kernel of the module")

    def prepare(self, *args):
        from ...runtime.ndarray import check_buffer
        drv = self.drv
        sig = self.signature
        if len(args) != len(sig.declared):
            raise TypeError(f"@{sig.name} takes {len(sig.declared)} argument(s), got {len(args)}")
        vals, owned, launches = {}, [], []
        try:
            for i, (p, a) in enumerate(zip(sig.declared, args)):
                if p.kind == "buffer":
                    check_buffer(a, p.dtype, p.shape, f"argument {i} ({p.name}) of @{sig.name}")
                    d = drv.mem_alloc(max(a.nbytes, 1))
                    owned.append(d)
                    drv.memcpy_htod(d, a)
                    vals[i] = (a, d)
                else:
                    vals[i] = (a, None)
            for s in self.steps:
                if s[0] == "alloc":
                    host = np.empty(s[2], s[3])   # stands for the buffer's shape and type; never read
                    d = drv.mem_alloc(max(host.nbytes, 1))
                    owned.append(d)
                    vals[s[1]] = (host, d)
                    continue
                k = self.kernels[s[1]]
                kargs, scalars = kernel_args(k.info.signature, [vals[j][0] for j in s[2]],
                                             lambda i, a, s=s: vals[s[2][i]][1])
                launches.append((k, kargs, scalars))
        except Exception:
            for d in owned:
                d.free()
            raise
        back = [vals[i] for i in sig.outputs]
        return Prepared(drv, launches, back, owned, _result(sig, args))

    def __call__(self, *args):
        return _call(self, args)


class CudaModule:
    """Kernels and host functions by name.  `drv` is pycuda.driver (or a
    stand-in with the same calls: mem_alloc, memcpy_htod, memcpy_dtoh,
    Context.synchronize); `functions` maps each kernel's C symbol to a
    callable ``f(*args, grid=, block=)``."""

    def __init__(self, functions, kernels, hosts=(), drv=None):
        self.drv = drv if drv is not None else _driver()
        self.kernels = {k.name: CudaKernel(functions[k.symbol or k.name], k, self.drv) for k in kernels}
        self.hosts = {f.sym_name: HostFunction(f, self.kernels, self.drv) for f in hosts}

    @classmethod
    def load(cls, image: bytes, kernels, hosts=()):
        drv = _driver()
        module = drv.module_from_buffer(image)
        return cls({k.symbol or k.name: module.get_function(k.symbol or k.name) for k in kernels},
                   kernels, hosts, drv)

    def __getitem__(self, name):
        f = self.hosts.get(name) or self.kernels.get(name)
        if f is None:
            raise KeyError(f"no function @{name} (have: {', '.join(sorted({**self.kernels, **self.hosts}))})")
        return f


def split(module_op, target="cuda"):
    """(CUDA source, [KernelInfo], [host tir.func]) for `module_op`."""
    from ..llvm.codegen import tir_funcs
    from ..spec import as_target
    from .codegen import generate, is_host, prepare
    t = as_target(target, "cuda")
    m = prepare(module_op)
    source, kernels = generate(m, t)
    hosts = [f for f in tir_funcs(m) if is_host(f)]
    return source, kernels, hosts


def build(module_op, target="cuda"):
    """Generate, compile (cubin) and load every function of `module_op`."""
    from ..spec import as_target
    from .compile import compile_cuda
    t = as_target(target, "cuda")
    _driver()   # fail before compiling when there is no GPU
    source, kernels, hosts = split(module_op, t)
    image = compile_cuda(source, t.arch, "cubin")
    return CudaModule.load(image, kernels, hosts)
