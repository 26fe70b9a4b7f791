"""numpy interop: aligned allocation, argument checks, random inputs.

Compiled kernels assume every buffer is C-contiguous, 64-byte aligned and
does not overlap another buffer argument (the codegen marks them ``noalias
align 64``).  :func:`empty_aligned` makes such arrays; :func:`check_buffer`
checks a user's array against a buffer parameter with a message that names
the argument.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

ALIGN = 64

_from_buffer = ctypes.c_char.from_buffer
_addressof = ctypes.addressof


def data_ptr(a: np.ndarray) -> int:
    """The address of `a`'s first element.  Through the buffer protocol it
    takes 0.4 us, where numpy's ``a.ctypes.data`` builds a ctypes helper
    object and takes 1.7: a decoding step of a 12-layer GPT-2 passes about
    800 pointers from Python, each kernel a few elementwise ops on 768
    numbers.  A read-only or empty array (no writable byte to export)
    goes through ``a.ctypes``."""
    try:
        return _addressof(_from_buffer(a))
    except (TypeError, ValueError, BufferError):
        return a.ctypes.data


def empty_aligned(shape, dtype, align: int = ALIGN) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on `align` bytes."""
    dtype = np.dtype(dtype)
    shape = tuple(int(d) for d in shape)
    # math.prod, not np.prod: a dynamic model allocates every result per
    # call, and np.prod's ufunc machinery was half of this function's 13 us
    n = math.prod(shape) * dtype.itemsize
    raw = np.empty(n + align, dtype=np.uint8)
    off = (-data_ptr(raw)) % align
    return raw[off:off + n].view(dtype).reshape(shape)


def zeros_aligned(shape, dtype, align: int = ALIGN) -> np.ndarray:
    a = empty_aligned(shape, dtype, align)
    a[...] = 0
    return a


def as_aligned(a: np.ndarray, align: int = ALIGN) -> np.ndarray:
    """`a` itself when C-contiguous and aligned, else an aligned copy."""
    if a.flags.c_contiguous and (a.size == 0 or data_ptr(a) % align == 0):
        return a
    out = empty_aligned(a.shape, a.dtype, align)
    out[...] = a
    return out


def as_kernel_input(a) -> np.ndarray:
    """`a` itself when it is what a kernel parameter takes (C-contiguous, its
    elements aligned to their type: every array numpy allocates), else a
    copy that is."""
    a = np.asarray(a)
    if a.flags.c_contiguous and a.flags.aligned:
        return a
    return np.array(a, order="C")


def copy_into(out, results):
    """Write `results` into the caller's `out` arrays (those a kernel did not
    write in place already); returns `out`."""
    for o, r in zip(out, results):
        if o is not r:
            np.copyto(o, r)
    return out


def is_aligned(a: np.ndarray, align: int = ALIGN) -> bool:
    return a.size == 0 or data_ptr(a) % align == 0


def check_buffer(a, dtype: str, shape, label: str) -> np.ndarray:
    """Check a numpy array against a buffer parameter (dtype name, shape with
    None for dynamic dims); raises TypeError / ValueError naming `label`."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{label} must be a numpy array, got {type(a).__name__}")
    if a.dtype != np.dtype(dtype):
        raise TypeError(f"{label} has dtype {a.dtype}, expected {dtype}")
    if a.ndim != len(shape) or any(d is not None and d != s for d, s in zip(shape, a.shape)):
        want = "x".join("?" if d is None else str(d) for d in shape) or "scalar"
        raise ValueError(f"{label} has shape {list(a.shape)}, expected {want}")
    if not a.flags.c_contiguous:
        raise ValueError(f"{label} must be C-contiguous (use np.ascontiguousarray)")
    return a


def available_memory():
    """The bytes a new allocation can get (Linux's MemAvailable), or None
    where the kernel does not say."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def random_array(shape, dtype, rng=None) -> np.ndarray:
    """Test data: normal floats, small integers, random booleans, strings of
    one digit (ml_dtypes' bfloat16 / float8 / float4 from f32 normals, its
    int4 / int2 from 0-3)."""
    rng = rng if rng is not None else np.random.default_rng(0)
    dtype = np.dtype(dtype)
    extension = dtype.kind == "V"   # ml_dtypes' types are numpy void-kind extensions
    if dtype.kind == "f":
        a = rng.standard_normal(shape).astype(dtype)
    elif extension and "float" in dtype.name:
        a = rng.standard_normal(shape).astype(np.float32).astype(dtype)
    elif dtype.kind == "b":
        a = rng.integers(0, 2, shape).astype(dtype)
    elif dtype.kind in "iu":
        a = rng.integers(0, 10, shape).astype(dtype)
    elif extension and "int" in dtype.name:
        a = rng.integers(0, 4, shape).astype(dtype)
    elif dtype.kind == "O":   # string tensors (the interpreter holds them as objects)
        return rng.integers(0, 10, shape).astype(str).astype(object)
    else:
        raise TypeError(f"no random data for dtype {dtype}")
    return as_aligned(np.ascontiguousarray(a))
