"""The calling convention of a compiled tir.func, shared by every backend.

A ``tir.func @f(%A: memref<64x?xf32>, %n: index, %B: memref<64xf32>)``
compiles to::

    void f(float* noalias A, int64_t n, float* noalias B, int64_t A_dim1)

* parameters in declaration order: a buffer is a pointer to its first
  element (row-major, C-contiguous, not overlapping any other buffer,
  aligned to its element type and no more: any C-contiguous numpy array is
  passed as it is, without a copy; the buffers the runtime allocates itself
  are 64-byte aligned, which only helps the cache); ``index`` is a 64-bit integer; other scalars are their C type;
* then one hidden ``int64_t`` per dynamic (``?``) dimension of each buffer,
  buffer by buffer, dimension by dimension: the code needs them to linearise
  n-d indices;
* outputs are the last ``num_outputs`` buffers, written in place; nothing is
  returned.

:func:`signature` describes this as data (:class:`Param` list), which the
LLVM JIT turns into ctypes calls, the CUDA launcher into kernel arguments,
and an object file carries as JSON (its ``__tvmd_manifest`` symbol) so that
it can be loaded and called without the IR.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Param:
    name: str                  # the argument's name hint (``A``), or ``argN``
    kind: str                  # "buffer", "scalar", or "dim" (hidden dynamic dimension)
    type: str                  # tir type text: memref<...>, index, f32, ...
    dtype: str                 # numpy dtype name of the element or scalar
    shape: tuple | None = None  # buffers: dims, None where dynamic
    buffer: int | None = None  # dims: which parameter's buffer
    axis: int | None = None    # dims: which dimension


@dataclass(frozen=True)
class Signature:
    name: str
    params: tuple
    num_outputs: int

    @property
    def declared(self):
        return [p for p in self.params if p.kind != "dim"]

    @property
    def buffers(self):
        return [i for i, p in enumerate(self.params) if p.kind == "buffer"]

    @property
    def outputs(self):
        bufs = self.buffers
        return bufs[len(bufs) - self.num_outputs:]

    def to_json(self):
        return {"name": self.name, "num_outputs": self.num_outputs,
                "params": [asdict(p) for p in self.params]}

    @classmethod
    def from_json(cls, d):
        params = []
        for p in d["params"]:
            p = dict(p)
            if p.get("shape") is not None:
                p["shape"] = tuple(p["shape"])
            params.append(Param(**p))
        return cls(d["name"], tuple(params), int(d["num_outputs"]))


def c_name(v, i):
    n = v.name or f"arg{i}"
    return n if n.replace("_", "a").isalnum() and not n[0].isdigit() else f"arg{i}"


def _dtype_name(t) -> str:
    """numpy's name for a scalar type; TVM's name when numpy has none (bfloat16)."""
    from ..ir import types as T
    if t is T.index:
        return "int64"
    try:
        return T.to_numpy_dtype(t).name
    except TypeError:
        return T.tvm_dtype_name(t) if str(t) != "bf16" else "bfloat16"


def storage_dtype(name):
    """The numpy dtype of a buffer whose element type is named `name` (a
    Param's dtype, or a numpy dtype): numpy's own, or for bfloat16, which
    numpy lacks, ir.types.storage_numpy_dtype's."""
    import numpy as np

    from ..ir import types as T
    return T.storage_numpy_dtype(T.bf16) if str(name) == "bfloat16" else np.dtype(name)


def signature(func_op) -> Signature:
    """The calling convention of a tir.func as data (see the module docstring)."""
    from ..ir import types as T
    params = []
    for i, a in enumerate(func_op.args):
        t = a.type
        name = c_name(a, i)
        if isinstance(t, T.MemRefType):
            params.append(Param(name, "buffer", str(t), _dtype_name(t.element_type), tuple(t.shape)))
        else:
            params.append(Param(name, "scalar", str(t), _dtype_name(t)))
    hidden = []
    for i, p in enumerate(params):
        if p.kind == "buffer":
            for ax, d in enumerate(p.shape):
                if d is None:
                    hidden.append(Param(f"{p.name}_dim{ax}", "dim", "index", "int64", None, i, ax))
    return Signature(func_op.sym_name, tuple(params + hidden), func_op.attributes.get("num_outputs", 1))


def manifest_text(sigs) -> str:
    """The JSON an object file carries to describe its functions."""
    return json.dumps({"tvmd_abi": 1, "functions": [s.to_json() for s in sigs]}, separators=(",", ":"))


def parse_manifest(text: str):
    d = json.loads(text)
    if d.get("tvmd_abi") != 1:
        raise ValueError("not a tvmd object file manifest")
    return [Signature.from_json(f) for f in d["functions"]]
