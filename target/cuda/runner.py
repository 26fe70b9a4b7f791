"""Launch compiled CUDA kernels on numpy arrays through pycuda (optional).

    from tvmd.target.cuda.runner import build
    lib = build(module_op, "cuda -arch=sm_90")   # codegen + compile + load
    lib["matmul"](A, B, C)                        # copies in, launches, copies outputs back

Only used where there is a GPU; importing this module does not import
pycuda, and :func:`build` says clearly when pycuda or a GPU is missing.
Arguments follow :mod:`tvmd.target.abi` (hidden dynamic dimensions are
filled in from the arrays); grid and block come from the kernel's
:class:`~tvmd.target.cuda.codegen.KernelInfo`.
"""

from __future__ import annotations


class CudaUnavailable(RuntimeError):
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


class CudaKernel:
    def __init__(self, function, info):
        self.function = function
        self.info = info

    def __call__(self, *args):
        import numpy as np

        from ...runtime.ndarray import check_buffer
        drv = _driver()
        sig = self.info.signature
        declared = sig.declared
        if len(args) != len(declared):
            raise TypeError(f"@{sig.name} takes {len(declared)} argument(s), got {len(args)}")
        kargs, devbufs, scalars, arrays = [], [], {}, {}
        for i, (p, a) in enumerate(zip(declared, args)):
            if p.kind == "buffer":
                check_buffer(a, p.dtype, p.shape, f"argument {i} ({p.name}) of @{sig.name}")
                d = drv.mem_alloc(max(a.nbytes, 1))
                drv.memcpy_htod(d, a)
                devbufs.append((i, d))
                arrays[i] = a
                kargs.append(d)
            else:
                v = np.array(a, dtype=p.dtype)[()]
                scalars[p.name] = v
                kargs.append(v)
        for p in sig.params[len(declared):]:
            kargs.append(np.int64(arrays[p.buffer].shape[p.axis]))
        grid, block = self.info.resolve(scalars)
        self.function(*kargs, grid=grid, block=block)
        drv.Context.synchronize()
        for i, d in devbufs:
            if arrays[i].flags.writeable:
                drv.memcpy_dtoh(arrays[i], d)
            d.free()
        outs = [args[i] for i in sig.outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)


class CudaModule:
    def __init__(self, image: bytes, kernels):
        drv = _driver()
        self.module = drv.module_from_buffer(image)
        self.kernels = {k.name: CudaKernel(self.module.get_function(k.symbol or k.name), k) for k in kernels}

    def __getitem__(self, name):
        return self.kernels[name]


def build(module_op, target="cuda"):
    """Generate, compile (cubin) and load every tir.func of `module_op`."""
    from ..spec import as_target
    from .codegen import generate
    from .compile import compile_cuda
    t = as_target(target, "cuda")
    source, kernels = generate(module_op, t)
    image = compile_cuda(source, t.arch, "cubin")
    return CudaModule(image, kernels)
