"""relay: the graph-level dialect (TVM's Relay as MLIR-style ops)."""

from . import ops  # noqa: F401
