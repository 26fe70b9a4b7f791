"""--convert-layout after --fuse-ops: convert inside the primitive (fused)
functions and move the layout transforms to the kernels' boundaries.

After fusion a conv sits in a ``primitive`` relay.func that ``main`` calls;
converting only ``main`` (what the pass did before) changed nothing.  Here
each caller (a function that is not primitive) is walked in order, and at
each ``call @f`` of a primitive function:

1. **Seed.**  An argument that arrives through ``layout_transform {L -> O}``
   (a converted value going back to its original layout O) means the
   callee's parameter can be read in L: the body starts with
   ``layout_transform(%p) {O -> L}`` and the parameter is a twin of it, so
   pools and elementwise ops follow the layout across kernels as they do in
   one function.  Every call site must pass that layout; a callee whose
   producers are not converted yet waits for a later round.
2. **Convert** the callee's body with the pass's :class:`Converter`: named
   ops rebuilt, consumers adapted, transforms back at ``return``.
3. **Hoist the boundaries.**  A parameter read only by a chain of
   reshapes and layout transforms ending in one (a lower-rank parameter of
   a broadcast is reshaped to the rank, then transformed) takes the chain's
   type, and the chain goes to every call site, before the call; a ``return`` of a
   ``layout_transform {L -> O}`` used only there returns its input (the
   transform goes after every call).  The signature and every call are
   retyped.
4. **Clean the caller**: transforms compose, inverse pairs cancel (the
   canonicalize patterns), dead transforms go.  Between two converted
   kernels nothing is left; a constant weight's transform waits for
   ``--fold-constant``; the model's input and output get one transform
   each, which a second ``--fuse-ops`` fuses like any other op.

A callee that converts nothing keeps its signature and its calls.
"""

from __future__ import annotations

from ..ops.function import CallOp, FuncOp
from ..ops.transform import LayoutTransformOp


def convert_fused(pass_, module, ctx, callers):
    """Convert the primitive functions `callers` call (statistics to `ctx`)."""
    from . import is_primitive
    from .convert_layout import Converter
    body = module.regions[0].blocks[0]
    funcs = {op.attributes["sym_name"]: op for op in body.ops if isinstance(op, FuncOp)}
    calls: dict[str, list] = {}
    for f in funcs.values():
        for op in f.walk(include_self=False):
            if isinstance(op, CallOp):
                calls.setdefault(op.callee, []).append(op)
    # the primitive callees in the order the callers first call them
    order = []
    for caller in callers:
        for op in caller.walk(include_self=False):
            f = funcs.get(op.callee) if isinstance(op, CallOp) else None
            if f is not None and is_primitive(f) and op.callee not in order:
                order.append(op.callee)
    desired = set(Converter(pass_).desired)
    changed, done, progress = 0, set(), True
    # Rounds: a callee whose arguments all come back from one layout can
    # follow it only once its producers are converted (a concatenate of two
    # convs called twice waits for all four).
    while progress:
        progress = False
        for name in order:
            if name in done:
                continue
            f, sites = funcs[name], calls[name]
            block = f.regions[0].blocks[0]
            seeds = _agreed_seeds(block, sites)
            if not seeds and not any(op.name in desired for op in f.walk(include_self=False)):
                continue
            done.add(name)
            progress = True
            c = Converter(pass_)
            c.relayable = set(block.args)
            _seed(c, block, seeds)
            c.convert_block(block)
            if (c.converted or c.adapted) and _hoist(f, sites):
                changed += 1
            pass_.report(c, ctx)
    for caller in callers:
        _clean(caller)
    if changed:
        ctx.stat(pass_, "functions-retyped", changed)


def _agreed_seeds(block, sites):
    """{parameter: (L, O, type in L)} for each used parameter whose
    argument at every call site is ``layout_transform {L -> O}``."""
    seeds = {}
    for i, p in enumerate(block.args):
        if not p.uses:
            continue
        got = set()
        for call in sites:
            d = call.operands[i].defining_op()
            if not isinstance(d, LayoutTransformOp):
                break
            got.add((d.attributes["src_layout"], d.attributes["dst_layout"], d.operands[0].type))
        else:
            if len(got) == 1:
                seeds[p] = got.pop()
    return seeds


def _seed(c, block, seeds):
    """Twin each seeded parameter: its value in layout L, made by a
    transform at the top of the body that the sweep leaves alone."""
    first = block.first
    for p, (src, dst, t_src) in seeds.items():
        t = LayoutTransformOp.build(p, src_layout=dst, dst_layout=src, loc=first.loc)
        if t.results[0].type is not t_src:
            t.drop_operands()
            continue
        block.insert_before(first, t)
        if p.name:
            t.results[0].name = f"{p.name}_{src.lower()}"
        c.twin[p] = (t.results[0], src, dst)
        c.seeds.add(t)
        c.maybe_dead.append(t)   # unused when no consumer could follow the layout


def _hoist(f, sites) -> bool:
    """Move parameter and return transforms of `f` to its call sites."""
    from ....ir.types import FunctionType
    block = f.regions[0].blocks[0]
    ft = f.attributes["function_type"]
    inputs, results = list(ft.inputs), list(ft.results)
    moved = False
    for i, p in enumerate(block.args):
        chain = _boundary_chain(p)
        if not chain:
            continue
        last = chain[-1].results[0]
        last.replace_all_uses_with(p)
        for op in reversed(chain):
            op.erase()
        p.type = inputs[i] = last.type
        for call in sites:
            v = a = call.operands[i]
            for op in chain:
                new = type(op).build(v, loc=call.loc, **op.attributes)
                call.parent.insert_before(call, new)
                v = new.results[0]
            if a.name:
                v.name = f"{a.name}_{chain[-1].attributes['dst_layout'].lower()}"
            call.set_operand(i, v)
        moved = True
    ret = block.last
    back = []
    for j, v in enumerate(ret.operands):
        d = v.defining_op()
        if isinstance(d, LayoutTransformOp) and v.uses == [ret] and j < len(results):
            back.append((j, d))
    if len(ret.operands) == 1 and back:
        (j, d), = back
        x = d.operands[0]
        ret.set_operand(j, x)
        d.erase()
        results[j] = x.type
        src, dst = d.attributes["src_layout"], d.attributes["dst_layout"]
        for k, call in enumerate(sites):
            new = CallOp(list(call.operands), [x.type], dict(call.attributes), (), call.loc)
            call.parent.insert_before(call, new)
            tr = LayoutTransformOp.build(new.results[0], src_layout=src, dst_layout=dst, loc=call.loc)
            call.parent.insert_after(new, tr)
            name = call.results[0].name
            if name:
                new.results[0].name = f"{name}_{src.lower()}"
                tr.results[0].name = name
            call.results[0].replace_all_uses_with(tr.results[0])
            call.erase()
            sites[k] = new
        moved = True
    if moved:
        f.attributes["function_type"] = FunctionType(inputs, results)
    return moved


_MOVABLE = ("relay.layout_transform", "relay.reshape")


def _boundary_chain(p):
    """The ops that read parameter `p` alone, one after another
    (reshapes and layout transforms, ending in a transform), which can run
    at the call site instead: [] when there is none."""
    chain, v = [], p
    while len(v.users) == 1:
        u = v.users[0]
        if u.name not in _MOVABLE or len(u.operands) != 1:
            break
        chain.append(u)
        v = u.results[0]
    while chain and not isinstance(chain[-1], LayoutTransformOp):
        chain.pop()
    return chain


def _clean(func):
    """Compose and cancel the caller's transforms; drop the dead ones."""
    from ....ir.rewriter import apply_patterns_greedily
    from .canonicalize import LayoutTransformCompose, LayoutTransformIdentity
    apply_patterns_greedily(func, [LayoutTransformIdentity(), LayoutTransformCompose()])
    while True:
        dead = [op for op in func.walk(include_self=False)
                if isinstance(op, LayoutTransformOp) and not op.results[0].uses]
        if not dead:
            return
        for op in dead:
            op.erase()
