"""Control flow: If -> relay's ``if`` with a region per branch.

A condition known at import time selects its branch, inlined.  Otherwise
the branches are ONNX subgraphs reading outer tensors by name; each becomes
a region (which sees the enclosing values) ending in ``yield``.  relay's if
yields one value, so several outputs travel as a tuple.  Loop and Scan
have no relay counterpart yet and stay unsupported.
"""

from __future__ import annotations

from ....ir import types as T
from ..registry import converter


@converter("If", 1)
def if_node(cx, node):
    from ....dialects.relay.ops.control import IfOp, YieldOp
    from ....ir.core import Block, OP_CLASSES, Region
    if "relay.if" not in OP_CLASSES:
        raise cx.unsupported("relay op 'if' is not available")
    cond = node.input(0)
    known = cx.static(cond, bound=False)
    if known is not None:
        # a condition that follows from constants (often from static shapes):
        # the branch taken, inline; the other may not even type-check
        branch = node.attr("then_branch" if bool(known.reshape(-1)[0]) else "else_branch")
        return cx.importer.convert_subgraph(branch, cx.builder.block, inline=True)
    if cx.shape(cond) != ():
        cond = cx.op("reshape", cond, newshape=())
    if cx.dtype(cond) is not T.i1:
        cond = cx.cast(cond, T.i1)
    regions = []
    n = None
    for attr in ("then_branch", "else_branch"):
        block = Block()
        outs = cx.importer.convert_subgraph(node.attr(attr), block)
        if n is not None and len(outs) != n:
            raise cx.error("the branches have different numbers of outputs")
        n = len(outs)
        val = outs[0] if n == 1 else _tuple_in(cx, block, outs)
        block.append(YieldOp([val], (), None, (), cx.loc))
        regions.append(Region([block]))
    from ....ir.diagnostics import DiagnosticError
    try:
        op = IfOp.build(cond, regions=regions, loc=cx.loc)
    except DiagnosticError as e:
        raise cx.unsupported(f"branches of different types ({e.diagnostics[0].message})") from None
    cx.builder.insert(op)
    res = op.results[0]
    return res if n == 1 else [cx.get_item(res, i) for i in range(n)]


def _tuple_in(cx, block, values):
    from ....dialects.relay.ops.control import TupleOp
    from ....ir.builder import Builder
    saved = cx.builder
    cx.builder = Builder.at_end(block, cx.loc)
    try:
        return cx.op("tuple", *values)
    finally:
        cx.builder = saved
