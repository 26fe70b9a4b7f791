"""tvmd: the classic TVM compiler stack as MLIR-style dialects."""

__version__ = "0.1.0"
