"""``tvm.contrib`` for classic scripts (``from tvmd.contrib import
graph_executor``): the graph executor of tvmd.classic."""

import sys

from ..classic.contrib import graph_executor

sys.modules[__name__ + ".graph_executor"] = graph_executor

__all__ = ["graph_executor"]
