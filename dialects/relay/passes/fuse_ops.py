"""--fuse-ops: TVM's FuseOps, on SSA blocks.

Each non-primitive relay.func is partitioned into groups, block by block
(its body, and the blocks of any ``if`` / ``match`` / closure nested in
it), and each group becomes one module-level ``relay.func @fused_<ops>
attributes {primitive}`` (one kernel) that the block calls.  The partition
is TVM's (src/relay/analysis/graph_partitioner.cc), step for step:

1. Indexed forward graph.  Nodes are the block's ops in program order (a
   topological order) except constants and the terminator; an edge goes
   from an op to each user, one per operand slot, labelled with the user's
   pattern kind (``PATTERN`` on each op class), demoted from BROADCAST to
   ELEMWISE when that operand already has the result's shape.  As in TVM's
   IndexedForwardGraph, an edge into a ``tuple`` is INJECTIVE, and a
   ``get_item`` of a tuple holding non-tensors cuts its producer off.  A
   value used by ``return``, by an op with regions (``if``, ``match``,
   ``fn``: TVM's "do not fuse through if"), by an op nested in a region, or
   anything else outside the graph is ``extern_ref``.  Constants and block
   arguments are not nodes: they have no inputs, so they never change anyone's
   post-dominator.  Dead pure ops are erased first: TVM's graph holds only
   what the result needs, and a dead user would change who post-dominates
   whom.
2. Post-dominator tree, in one reverse-topological sweep: a node's immediate
   post-dominator is the least common ancestor (walking up by depth) of its
   users; the edge and node patterns met on the way are max-combined into
   the node's ``dom pattern``.  An extern_ref node has no post-dominator.
3. Union-find groups, three sweeps in topological order:
   phase 0: an OUT_ELEMWISE_FUSABLE anchor (conv2d, dense, pools, softmax)
            fuses into its post-dominator when the dom pattern is ELEMWISE and
            every node on the paths between is at most BROADCAST;
            ELEMWISE/BROADCAST nodes fuse into a post-dominator that is at
            most INJECTIVE or a COMM_REDUCE (a reduction takes in its
            elementwise inputs), reached through at most INJECTIVE nodes (the
            sink may be an anchored group);
   phase 1: the same for ELEMWISE/BROADCAST, plus INJECTIVE and TUPLE
            nodes (all paths INJECTIVE) -- deferred so that anchors finish;
   phase 2: injective ops into intermediate tuples.
   A COMM_REDUCE node fuses into nothing, and an OPAQUE one never fuses.
   Fusing merges every node on every path from the node to its
   post-dominator, so a group has one output: its root.  ``max-depth`` caps
   a group's node count; ``opt-level=0`` keeps each op alone.
4. Outlining: each group's ops are cloned into a primitive function whose
   parameters are the group's inputs in first-use order (``%p0, %p1, ...``);
   single-element constants are cloned in, larger ones stay in the caller and
   are passed.  The group's root becomes ``%r = call @fused_...(args)``.
   As in TVM's FuseMutator, a group that is a lone ``tuple``, a lone
   ``get_item`` of another group's tuple, a call or an op with regions is
   left as it is.  Structurally identical groups (same ops, attributes,
   wiring and types) share one function; name clashes get ``_1``, ``_2``.

Beyond TVM, and on by default, ``reduce-epilogue`` lets a COMM_REDUCE group
fuse into its post-dominator too, through at most INJECTIVE nodes and other
reductions (never into an anchored group): LayerNorm's mean, variance and
normalisation then form one kernel, where TVM makes four (``mean``,
``subtract``, ``power_mean``, ``add_sqrt_divide_multiply_add``), and a
BERT-base encoder layer drops from 58 ops to 17 kernels instead of 23.
``reduce-epilogue=false`` gives TVM's partition exactly.

Cost: the graph, tree and outlining are linear; each fusion attempt walks
only the nodes between a node and its post-dominator (as in TVM), so a
chain of n ops is O(n).  All walks are iterative: no recursion limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir.pass_manager import ModulePass, option
from ....ir.traits import ISOLATED_FROM_ABOVE, TERMINATOR
from . import relay_functions
from ..ops.base import RelayOp
from ..ops.control import TupleGetItemOp, TupleOp
from ..ops.function import CallOp, ConstantOp, FuncOp, ReturnOp

# OpPattern values, as plain ints (compared in hot loops).
ELEMWISE, BROADCAST, INJECTIVE, COMM_REDUCE, OUT_EWISE, TUPLE, OPAQUE = 0, 1, 2, 3, 4, 7, 8

# TVM truncates kernel names past this length and appends a hash.
MAX_NAME_LENGTH = 80

# ops TVM leaves out of kernel names (they compute nothing)
_UNNAMED = (TupleOp, TupleGetItemOp)


@dataclass
class FuseOps(ModulePass):
    """Fuse relay ops into primitive functions, one kernel each.

    A whole-module pass: each fused group becomes a new primitive function."""

    NAME = "fuse-ops"
    OP = "builtin.module"
    max_depth: int = option(256, "the most ops in one fused group")
    opt_level: int = option(2, "TVM's opt level: 0 keeps each op in a kernel of its own")
    reduce_epilogue: bool = option(True, "let a reduction fuse into its post-dominator through injective ops "
                                         "(false: TVM's partition exactly)")

    def validate(self):
        if self.max_depth < 1:
            raise ValueError(f"max-depth must be at least 1, got {self.max_depth}")
        if self.opt_level < 0:
            raise ValueError(f"opt-level must be >= 0, got {self.opt_level}")

    def run(self, module, ctx):
        from .dce import erase_dead_ops
        from .infer_type import ensure_types
        ensure_types(module)
        outliner = Outliner(module)
        table = {op.attributes["sym_name"]: op for op in module.regions[0].blocks[0].ops
                 if isinstance(op.attributes.get("sym_name"), str)}
        dead = 0
        for func in relay_functions(module, include_primitive=False):
            for block in function_blocks(func):
                # TVM's graph holds only what the block's result needs; a dead
                # user would otherwise break post-dominance (and a group's single output)
                dead += erase_dead_ops(block, table)
                graph = Graph(block)
                groups = partition(graph, self.max_depth, self.opt_level, self.reduce_epilogue)
                outliner.outline(func, graph, groups)
        ctx.stat(self, "fused-groups", outliner.groups)
        ctx.stat(self, "functions-created", outliner.created)
        ctx.stat(self, "ops-fused", outliner.ops)
        ctx.stat(self, "dead-ops-erased", dead)


def function_blocks(func):
    """The body of `func` and every block nested in it (if/match branches,
    closure bodies), but not inside isolated-from-above ops."""
    out = []
    stack = [func.regions[0].blocks[0]]
    while stack:
        b = stack.pop()
        out.append(b)
        for op in b.ops:
            if op.regions and ISOLATED_FROM_ABOVE not in op.traits:
                for r in op.regions:
                    stack.extend(r.blocks)
    return out


# -- 1. the indexed forward graph ----------------------------------------------

def op_pattern(op) -> int:
    """The op's fusion pattern; anything that is not a plain relay op
    (a call is a RelayOp marked OPAQUE), that has regions, or that reads or
    makes a value a kernel cannot hold (a closure, an ADT value, a tuple of
    those) is OPAQUE: kernels take and give tensors and tuples of tensors."""
    if isinstance(op, RelayOp) and not op.regions:
        for v in op.operands:
            if not _kernel_type(v.type):
                return OPAQUE
        for r in op.results:
            if not _kernel_type(r.type):
                return OPAQUE
        return int(op.PATTERN)
    return OPAQUE


def _kernel_type(t) -> bool:
    from ....ir.types import TensorType, TupleType
    if isinstance(t, TensorType):
        return True
    return isinstance(t, TupleType) and all(_kernel_type(x) for x in t.types)


class Graph:
    """Nodes are the ops of `block` except constants and the terminator."""

    __slots__ = ("ops", "pattern", "outputs", "extern_ref")

    def __init__(self, block):
        from ....ir.types import TensorType, TupleType
        ops = [op for op in block.ops if not isinstance(op, ConstantOp) and TERMINATOR not in op.traits]
        index = {op: i for i, op in enumerate(ops)}
        n = len(ops)
        pattern = [op_pattern(op) for op in ops]
        outputs = [[] for _ in range(n)]
        extern = [False] * n
        for i, op in enumerate(ops):
            p = pattern[i]
            rshape = _shape(op.results[0].type) if len(op.results) == 1 else None
            for v in op.operands:
                d = v.defining_op()
                j = index.get(d) if d is not None else None
                if j is None:
                    continue
                if op.regions:
                    extern[j] = True    # do not fuse through if / match / fn
                    continue
                if isinstance(op, TupleOp):
                    if not isinstance(v.type, TensorType):
                        extern[j] = True
                        continue
                    ep = INJECTIVE
                elif isinstance(op, TupleGetItemOp):
                    t = v.type
                    if isinstance(t, TupleType) and not all(isinstance(f, TensorType) for f in t.types):
                        extern[j] = True
                        continue
                    ep = INJECTIVE
                else:
                    ep = p
                    if ep == BROADCAST and rshape is not None and _shape(v.type) == rshape:
                        ep = ELEMWISE
                outputs[j].append((i, ep))
        for i, op in enumerate(ops):
            if extern[i]:
                continue
            for r in op.results:
                for u in r.uses:
                    if u not in index:   # return, an op in a nested region, ...
                        extern[i] = True
                        break
            # a result nobody uses at all is left alone, as TVM leaves dead code
        self.ops = ops
        self.pattern = pattern
        self.outputs = outputs
        self.extern_ref = extern


def _shape(t):
    return getattr(t, "shape", None)


# -- 2. the post-dominator tree -------------------------------------------------

class PostDomTree:
    """parent[i] (-1: none), depth[i] and the combined pattern to the parent."""

    __slots__ = ("parent", "depth", "pattern")

    def __init__(self, g: Graph):
        n = len(g.ops)
        parent = [-1] * n
        depth = [1] * n
        dpat = [OPAQUE] * n
        self.parent, self.depth, self.pattern = parent, depth, dpat
        for i in range(n - 1, -1, -1):
            if g.extern_ref[i]:
                continue  # depth 1, no parent, OPAQUE
            outs = g.outputs[i]
            pat = ELEMWISE
            if not outs:
                dpat[i] = pat
                continue
            node, ep = outs[0]
            pat = max(pat, ep)
            for u, ep in outs[1:]:
                node, pat = self._lca(node, u, pat)
                pat = max(pat, ep)
            parent[i] = node
            depth[i] = depth[node] + 1 if node >= 0 else 1
            dpat[i] = pat

    def _lca(self, a, b, pat):
        parent, depth, dpat = self.parent, self.depth, self.pattern
        while a != b:
            if a < 0 or b < 0:
                return -1, pat
            da, db = depth[a], depth[b]
            if da < db:
                pat = max(pat, dpat[b])
                b = parent[b]
            elif db < da:
                pat = max(pat, dpat[a])
                a = parent[a]
            else:
                pat = max(pat, dpat[a], dpat[b])
                a = parent[a]
                b = parent[b]
        return a, pat


# -- 3. the partitioner -----------------------------------------------------------

class Group:
    """A union-find set of nodes; only the root's fields are the group's."""

    __slots__ = ("parent", "pattern", "root", "anchor", "num_nodes")

    def __init__(self, node, pattern):
        self.parent = None
        self.pattern = pattern
        self.root = node             # the node this Group was made for
        self.anchor = node if pattern == OUT_EWISE else -1
        self.num_nodes = 1

    def find(self) -> "Group":
        if self.parent is None:
            return self
        root = self
        while root.parent is not None:
            root = root.parent
        p = self
        while p is not root:   # path compression
            nxt = p.parent
            p.parent = root
            p = nxt
        return root


# CheckPath conditions: (group pattern of a node on the way, is it the sink?)

def _sink_ok_for_broadcast(kind, is_sink):
    if not is_sink:
        # elemwise, broadcast and injective ops on parallel branches may join
        return kind <= INJECTIVE
    return kind <= BROADCAST or kind in (COMM_REDUCE, INJECTIVE, OUT_EWISE)


def _at_most_broadcast(kind, is_sink):
    return kind <= BROADCAST


def _at_most_injective(kind, is_sink):
    return kind <= INJECTIVE


class Partitioner:
    def __init__(self, g: Graph, max_depth: int, reduce_epilogue: bool = False):
        self.g = g
        self.max_depth = max_depth
        self.reduce_epilogue = reduce_epilogue
        self.groups = [Group(i, p) for i, p in enumerate(g.pattern)]
        # visited marks: one int per node, compared against a generation
        # counter, so "clear the visited set" is O(1)
        self.mark = [0] * len(g.ops)
        self.gen = 0

    def _walk(self, src, sink):
        """Nodes reachable from `src`'s outputs, stopping at `sink`
        (which is yielded but not expanded); each node once."""
        self.gen += 1
        gen, mark, outputs = self.gen, self.mark, self.g.outputs
        stack = [u for u, _ in reversed(outputs[src])]
        while stack:
            n = stack.pop()
            if mark[n] == gen:
                continue
            mark[n] = gen
            yield n
            if n != sink:
                for u, _ in reversed(outputs[n]):
                    if mark[u] != gen:
                        stack.append(u)

    def check_path(self, src, sink, cond) -> bool:
        groups = self.groups
        for n in self._walk(src, sink):
            if not cond(groups[n].find().pattern, n == sink):
                return False
        return True

    def check_epilogue_path(self, src, sink, from_reduce) -> bool:
        """reduce-epilogue's CheckPath: nodes on the way at most INJECTIVE or
        reductions; the sink may be anchored only when no reduction is
        involved (an anchor and a reduction never share a kernel)."""
        groups = self.groups
        reduce_seen = from_reduce
        sink_kind = OPAQUE
        for n in self._walk(src, sink):
            kind = groups[n].find().pattern
            if n == sink:
                sink_kind = kind
            elif kind == COMM_REDUCE:
                reduce_seen = True
            elif kind > INJECTIVE:
                return False
        if sink_kind <= INJECTIVE or sink_kind == COMM_REDUCE:
            return True
        return sink_kind == OUT_EWISE and not reduce_seen

    def merge(self, child: Group, parent: Group):
        child = child.find()
        parent = parent.find()
        if child is parent:
            return
        parent.num_nodes += child.num_nodes
        child.parent = parent
        if child.anchor >= 0:
            parent.anchor = child.anchor
            parent.pattern = max(child.pattern, parent.pattern)
        elif child.pattern == COMM_REDUCE and parent.pattern < COMM_REDUCE:
            # only reduce-epilogue merges a reduction into a later group; the
            # group now holds a reduction, and its checks must know it
            parent.pattern = COMM_REDUCE

    def commit_fuse(self, src, sink):
        groups = self.groups
        target = groups[sink]
        self.merge(groups[src], target)
        for n in self._walk(src, sink):
            if n != sink:
                self.merge(groups[n], target)

    def count_fused_nodes_with_new_child(self, child, dom_parent) -> int:
        groups = self.groups
        total = groups[dom_parent].find().num_nodes + groups[child].num_nodes
        for n in self._walk(child, dom_parent):
            if n != dom_parent:
                total += groups[n].num_nodes
        return total

    def run_phase(self, tree: PostDomTree, phase: int):
        groups = self.groups
        dparent, dpat = tree.parent, tree.pattern
        epilogue = self.reduce_epilogue
        for nid in range(len(groups)):
            g = groups[nid]
            if g.pattern == OPAQUE:
                continue
            dp = dparent[nid]
            if dp < 0:
                continue
            if self.count_fused_nodes_with_new_child(nid, dp) > self.max_depth:
                continue
            if phase == 2:
                # injective ops into intermediate tuples
                if g.pattern > INJECTIVE:
                    continue
                dpg = groups[dp]
                droot = dpg.find()
                if droot.pattern == TUPLE:
                    continue
                if dpg.pattern == TUPLE and droot.pattern <= INJECTIVE:
                    if self.check_path(nid, dp, _at_most_injective):
                        self.commit_fuse(nid, dp)
                continue
            if g.find() is groups[dp].find():
                continue
            if groups[dp].pattern == TUPLE:
                continue
            if g.pattern == OUT_EWISE:
                if phase != 0:
                    continue
                if dpat[nid] == ELEMWISE and self.check_path(nid, dp, _at_most_broadcast):
                    self.commit_fuse(nid, dp)
            elif g.pattern <= BROADCAST:
                if dpat[nid] <= INJECTIVE or dpat[nid] == COMM_REDUCE:
                    ok = (self.check_epilogue_path(nid, dp, False) if epilogue
                          else self.check_path(nid, dp, _sink_ok_for_broadcast))
                    if ok:
                        self.commit_fuse(nid, dp)
            elif g.pattern in (INJECTIVE, TUPLE):
                if phase != 1:
                    continue
                if self.check_path(nid, dp, _at_most_injective):
                    self.commit_fuse(nid, dp)
            elif g.pattern == COMM_REDUCE and epilogue:
                if dpat[nid] <= INJECTIVE or dpat[nid] == COMM_REDUCE:
                    if self.check_epilogue_path(nid, dp, True):
                        self.commit_fuse(nid, dp)
            # COMM_REDUCE (TVM): nothing fuses from a reduction


def partition(g: Graph, max_depth: int = 256, opt_level: int = 2, reduce_epilogue: bool = False) -> list[Group]:
    """The group of each node (call .find() for its set)."""
    p = Partitioner(g, max_depth, reduce_epilogue)
    if opt_level == 0 or not g.ops:
        return p.groups
    tree = PostDomTree(g)
    for phase in range(3):
        p.run_phase(tree, phase)
    return p.groups


# -- 4. outlining ---------------------------------------------------------------------

class Outliner:
    """Turns groups into primitive functions and calls, module-wide (so
    identical groups in different functions share one kernel)."""

    def __init__(self, module):
        self.module = module
        self.body = module.regions[0].blocks[0]
        self.taken = {op.attributes["sym_name"] for op in self.body.ops
                      if isinstance(op.attributes.get("sym_name"), str)}
        self.next_suffix: dict[str, int] = {}
        self.by_key: dict = {}
        self.groups = self.created = self.ops = 0

    def outline(self, func, g: Graph, groups):
        members: dict[int, list] = {}
        for i, op in enumerate(g.ops):
            members.setdefault(id(groups[i].find()), []).append(op)
        dead_consts = []
        for i, op in enumerate(g.ops):
            root = groups[i].find()
            if g.ops[root.root] is not op:
                continue
            ops = members[id(root)]
            if len(ops) == 1 and stays_as_is(op):
                continue
            self._outline_group(func, ops, dead_consts)
        for c in reversed(dead_consts):
            if c.parent is not None and not c.results[0].uses:
                c.erase()

    def _outline_group(self, func, ops, dead_consts):
        from ....ir.attributes import SymbolRef
        root = ops[-1]
        ops = _peel_projections(ops)
        if len(ops) == 1 and stays_as_is(root):
            return
        inside = set(ops)
        params, pindex = [], {}
        consts = []
        wiring = []
        local = {op: k for k, op in enumerate(ops)}
        for op in ops:
            refs = []
            for v in op.operands:
                d = v.defining_op()
                if d is not None and d in inside:
                    refs.append((0, local[d], v.index))
                elif isinstance(d, ConstantOp) and d.attributes["value"].size == 1:
                    refs.append((1, d.attributes["value"]))
                    consts.append(d)
                else:
                    k = pindex.get(v)
                    if k is None:
                        k = pindex[v] = len(params)
                        params.append(v)
                    refs.append((2, k))
            wiring.append((op.name, _attrs_key(op), tuple(refs), tuple(r.type for r in op.results)))
        for op in ops[:-1]:
            for r in op.results:
                for u in r.uses:
                    if u not in inside:
                        # the partition guarantees one output per group; anything else is a bug here
                        raise RuntimeError(f"fuse-ops: group rooted at {root.name} has a second output")
        key = (tuple(p.type for p in params), tuple(wiring))
        try:
            name = self.by_key.get(key)
        except TypeError:  # an unhashable attribute: no sharing for this group
            key, name = None, None
        if name is None:
            name = self._new_name(ops)
            self.body.insert_before(func, self._make_function(name, ops, params, root))
            if key is not None:
                self.by_key[key] = name
            self.created += 1
        rtype = root.results[0].type
        call = CallOp(params, [rtype], {"callee": SymbolRef(name)}, (), root.loc)
        root.parent.insert_before(root, call)
        call.results[0].name = root.results[0].name
        root.results[0].replace_all_uses_with(call.results[0])
        for op in reversed(ops):
            op.erase()
        dead_consts.extend(consts)
        self.groups += 1
        self.ops += len(ops)

    def _make_function(self, name, ops, params, root):
        from ....ir.attributes import UNIT
        from ....ir.core import Block, Region
        from ....ir.types import FunctionType
        block = Block([p.type for p in params], [f"p{i}" for i in range(len(params))])
        mapping = dict(zip(params, block.args))
        for op in ops:
            for v in op.operands:
                if v not in mapping:
                    # a single-element constant: cloned into the kernel
                    c = v.defining_op().clone()
                    block.append(c)
                    mapping[v] = c.results[0]
            block.append(op.clone(mapping))
        block.append(ReturnOp([mapping[root.results[0]]], (), None, (), root.loc))
        ft = FunctionType([p.type for p in params], [root.results[0].type])
        return FuncOp((), (), {"sym_name": name, "function_type": ft, "primitive": UNIT},
                      [Region([block])], ops[0].loc)

    def _new_name(self, ops) -> str:
        parts = [op.name[len("relay."):].replace(".", "_") for op in ops if not isinstance(op, _UNNAMED)]
        base = "fused_" + "_".join(parts) if parts else "fused"
        if len(base) > MAX_NAME_LENGTH:
            import hashlib
            h = hashlib.blake2b(base.encode(), digest_size=4).hexdigest()
            base = f"{base[:MAX_NAME_LENGTH]}_{h}"
        name = base
        if name in self.taken:
            n = self.next_suffix.get(base, 1)
            while f"{base}_{n}" in self.taken:
                n += 1
            self.next_suffix[base] = n + 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name


def _peel_projections(ops):
    """The group without the ``get_item``s of tuples made outside it: those
    stay in the caller and the kernel takes the projected tensor, so a
    primitive function never has a tuple-typed parameter (which
    --lower-relay-to-te could not lower).  A get_item of a get_item of an
    outside tuple is peeled too."""
    root = ops[-1]
    peeled = set()
    changed = True
    while changed:
        changed = False
        inside = set(ops) - peeled
        for op in ops:
            if op is root or op in peeled or not isinstance(op, TupleGetItemOp):
                continue
            d = op.operands[0].defining_op()
            if d is None or d not in inside:
                peeled.add(op)
                changed = True
    return [op for op in ops if op not in peeled] if peeled else ops


def stays_as_is(op) -> bool:
    """A one-op group TVM's FuseMutator leaves in the caller: a call, an op
    with regions or from another dialect, a tuple, or a get_item of a tuple
    made elsewhere (an isolated projection)."""
    return (not isinstance(op, RelayOp) or isinstance(op, (CallOp, TupleOp, TupleGetItemOp))
            or bool(op.regions))


def _attrs_key(op):
    # the type of each value keeps 1, 1.0 and true apart
    return tuple((k, type(v).__name__, v) for k, v in op.attributes.items())
