"""tvmd: the classic TVM compiler stack as MLIR-style dialects.

``import tvmd as tvm`` also gives classic TVM's Python names (``tvm.te``,
``tvm.lower``, ``tvm.build``, ``tvm.nd``, ``tvm.target``, ``tvm.tir``,
``tvm.cpu``, ``tvm.device``), imported from :mod:`tvmd.classic` on first use
so that ``import tvmd`` stays instant.
"""

__version__ = "0.1.0"

_CLASSIC = frozenset({"te", "nd", "target", "tir", "lower", "build", "cpu", "cuda", "gpu", "device", "const",
                      "TVMError", "relay", "transform", "IRModule"})


def __getattr__(name):
    if name in _CLASSIC:
        import importlib
        value = getattr(importlib.import_module(".classic", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _CLASSIC)
