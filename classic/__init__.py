"""Classic TVM's Python API on top of the te dialect.

A classic TE script runs with only its imports changed::

    import tvmd as tvm
    from tvmd import te

    A = te.placeholder((n, n), name="A")
    ...
    s = te.create_schedule(C.op)
    yo, yi = s[C].split(s[C].op.axis[0], factor=32)
    print(tvm.lower(s, [A, B, C], simple_mode=True))   # tir text
    f = tvm.build(s, [A, B, C], target="llvm")
    f(tvm.nd.array(a), tvm.nd.array(b), c)

Modules: ``expr`` (scalar expressions), ``te`` (placeholder, compute,
reducers, math), ``schedule`` (Schedule / Stage, emitting te schedule ops),
``emit`` (expressions -> arith / te ops), ``build`` (lower, build, modules),
``nd`` (arrays, devices), ``target`` (Target), ``tir`` (tvm.tir helpers),
``relay`` (Relay's Python builders, transforms, build, frontends),
``transform`` (PassContext, Sequential), ``contrib.graph_executor``.
``tvmd.te``, ``tvmd.nd``, ``tvmd.lower``, ... are these, imported lazily by
the package root.  docs/python-api.md lists what is covered.
"""

from . import contrib, nd, relay, target, te, tir, transform
from .build import IRModule, build, lower
from .expr import TVMError, const
from .nd import cpu, cuda, device, gpu

__all__ = ["te", "nd", "target", "tir", "lower", "build", "cpu", "cuda", "gpu", "device", "const", "TVMError",
           "relay", "transform", "contrib", "IRModule"]
