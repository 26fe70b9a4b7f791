"""``tvm.contrib``: the graph executor."""

from . import graph_executor

__all__ = ["graph_executor"]
