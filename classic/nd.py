"""``tvmd.nd`` and devices: ``tvm.nd.array``, ``tvm.cpu(0)``, ``tvm.device("cpu")``.

An NDArray is a numpy array (64-byte aligned, C-contiguous: what compiled
kernels want, so no copy is made per call) with TVM's methods (``numpy()``,
``asnumpy()``, ``copyfrom``, ``copyto``, ``shape``, ``dtype``, ``device``).
Arrays live in host memory whatever their device says; a CUDA module
copies them to the GPU per call (backend/cuda/runner.py).
"""

from __future__ import annotations

import numpy as np

_KINDS = {"cpu": 1, "llvm": 1, "cuda": 2, "gpu": 2, "nvptx": 2}


class Device:
    """TVM's ``Device``: ``device_type`` (1 cpu, 2 cuda) and ``device_id``."""

    __slots__ = ("device_type", "device_id")

    def __init__(self, device_type, device_id=0):
        self.device_type, self.device_id = device_type, device_id

    @property
    def kind(self):
        return "cpu" if self.device_type == 1 else "cuda"

    @property
    def exist(self):
        if self.device_type == 1:
            return True
        try:
            from ..backend.cuda.runner import _driver
            _driver()
            return True
        except Exception:   # noqa: BLE001 (no pycuda, no GPU)
            return False

    def sync(self):
        pass

    def __eq__(self, other):
        return isinstance(other, Device) and (self.device_type, self.device_id) == (other.device_type, other.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __repr__(self):
        return f"{self.kind}({self.device_id})"


def device(dev_type, dev_id=0):
    """``tvm.device("cpu")``, ``tvm.device("cuda", 0)``."""
    if isinstance(dev_type, Device):
        return dev_type
    key = str(dev_type).split()[0]
    if key not in _KINDS:
        raise ValueError(f"unknown device '{dev_type}' (known: {', '.join(_KINDS)})")
    return Device(_KINDS[key], int(dev_id))


def cpu(dev_id=0):
    return Device(1, dev_id)


def cuda(dev_id=0):
    return Device(2, dev_id)


gpu = cuda


class NDArray:
    """An array on a device; ``numpy()`` gives a copy as numpy."""

    def __init__(self, data: np.ndarray, dev: Device):
        self._data = data
        self.device = dev

    @property
    def shape(self):
        return tuple(self._data.shape)

    @property
    def dtype(self):
        return str(self._data.dtype)

    ctx = property(lambda self: self.device)

    def numpy(self):
        return self._data.copy()

    asnumpy = numpy

    def copyfrom(self, source):
        src = source.numpy() if isinstance(source, NDArray) else np.asarray(source)
        if src.shape != self._data.shape:
            raise ValueError(f"copyfrom: shape {src.shape} does not match {self._data.shape}")
        self._data[...] = src
        return self

    def copyto(self, target):
        if isinstance(target, NDArray):
            return target.copyfrom(self)
        return array(self._data, target)

    def __array__(self, dtype=None, copy=None):
        return self._data if dtype is None else self._data.astype(dtype)

    def __repr__(self):
        return f"<tvmd.nd.NDArray shape={self.shape}, {self.device}>\n{self._data!r}"


def array(arr, device=None, dtype=None):
    """``tvm.nd.array(np_array, device=tvm.cpu(0))``: an aligned copy."""
    from ..runtime.ndarray import empty_aligned
    if isinstance(arr, NDArray):
        arr = arr._data
    a = np.asarray(arr, dtype=dtype)
    out = empty_aligned(a.shape, a.dtype)
    out[...] = a
    return NDArray(out, device or cpu(0))


def empty(shape, dtype="float32", device=None):
    """``tvm.nd.empty(shape, dtype, device)``: zero-filled (TVM leaves it uninitialised)."""
    from ..runtime.ndarray import zeros_aligned
    if isinstance(shape, int):
        shape = (shape,)
    return NDArray(zeros_aligned(tuple(shape), dtype), device or cpu(0))
