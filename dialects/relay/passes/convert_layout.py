"""--convert-layout='nn.conv2d=NHWC[:KERNEL] nn.max_pool2d=NHWC ...': TVM's ConvertLayout.

Each op named in the option is rewritten to its desired layout (a conv's
kernel layout after a colon; none or ``default`` picks the usual partner:
NHWC -> HWIO, NCHW -> OIHW, NCHW16c -> OIHW16i16o, depthwise NHWC -> HWOI).
The new layout then flows on through every consumer that can take it,
decided by the ``LAYOUT`` contract on each op class (ops/base.py), and
values go back to their original layout only where something needs it.

One forward sweep over each function body, in SSA order.  The sweep keeps,
for each original value that has a converted twin, ``(twin, L, O)``: the
twin holds the value in layout ``L`` where the original is in layout ``O``.
For each original op reading a twin (or named in the option):

* ``"layout"`` ops (conv2d, pools, global pools, resize, qnn.conv2d, ...)
  named in the option are rebuilt in the desired layout, reading their data
  (and weight) through ``layout_transform`` -- a transform of a constant
  weight is left for --fold-constant.  One not named follows its data's
  twin layout when it has no kernel (pools, resize: TVM's
  FInferCorrectLayout for them); a conv not named keeps its own layout.
* ``"elemwise"`` ops take the twin as it is.
* ``"broadcast"`` ops adapt when every other operand is a twin in the same
  layout, one element (kept), of the same rank (transformed; a constant
  folds later) or a lower-rank constant (re-laid out directly).
* ``"axis"`` ops are rebuilt with the attributes ``relayout(perm)`` gives
  (an axis renumbered, a per-axis list permuted), other same-rank operands
  transformed, 1-d parameters kept; they need a permutation, so not a
  blocked layout.
* a ``layout_transform`` of a twin becomes a transform of the twin, which
  vanishes when it lands back on the twin's layout.
* anything else (``"opaque"`` ops -- reshape, dense --, ops with tuple
  results, calls, ``return``) reads one memoized ``layout_transform``
  back to ``O``.
* an op with regions (if, match, fn) reads its own operands back, and the
  ops inside its regions are swept like the body (a conv in a branch
  converts; a twin defined outside is used inside).  The transform memo has
  one layer per block, so a transform built in a branch is never reused
  outside it.

A rebuilt op whose result type is not the original's in the new layout is
dropped and the op falls back to reading the original layout.  Transforms
compose when built: a transform of a transform becomes one transform from
the inner source, or nothing when the two are inverse.  Old ops left without
uses are erased at the end.  Linear: each op is visited once and each
transform is memoized per (value, src, dst).

Statistics: ``ops-converted`` (named ops rebuilt), ``ops-adapted`` (consumers
that followed a twin), ``layout-transforms`` (the transforms left in the
functions after the pass; --fold-constant then removes the weights').
"""

from __future__ import annotations

import re
from collections import ChainMap
from dataclasses import dataclass

from ....ir.pass_manager import option
from . import GraphFunctionPass, erase_if_dead
from ..ops.base import RelayOp
from ..ops.control import TupleGetItemOp
from ..ops.function import CallOp, ConstantOp
from ..ops.transform import LayoutTransformOp

_BLOCKED_DATA = re.compile(r"^NC([DHW]+)(\d+)c$")


@dataclass
class ConvertLayout(GraphFunctionPass):
    """Convert conv2d data layouts (e.g. nn.conv2d=NHWC), transforming only at boundaries."""

    NAME = "convert-layout"
    EXTRA_OPTIONS = "desired_layouts"
    EXTRA_OPTIONS_HELP = ("OP=DATA[:KERNEL]: the layouts to give each such op, e.g. nn.conv2d=NHWC "
                          "or nn.conv2d=NCHW4c:OIHW4i4o (kernel 'default': the one TVM pairs)")
    desired_layouts: dict[str, str] = option({}, "op name -> DATA[:KERNEL] layout (written as OP=LAYOUT entries)")

    target: str = option("llvm", "whose preferred layouts to use when no OP=LAYOUT is given")

    def validate(self):
        if not self.desired_layouts:
            self.desired_layouts = preferred_layouts(self.target)
        for op, spec in self.desired_layouts.items():
            self.layouts_for(op, spec)

    @staticmethod
    def layouts_for(op, spec, groups=1, channels=None):
        """'NHWC' or 'NHWC:HWIO' for op -> (data layout, kernel layout or None)."""
        from ....ir.registry import get_op_class
        from ..layouts import Layout, LayoutError
        cls = get_op_class("relay." + op)
        if cls is None or getattr(cls, "LAYOUT", None) != "layout":
            raise ValueError(f"cannot convert the layout of '{op}' (an op whose layouts are attributes: "
                             "nn.conv2d, nn.max_pool2d, image.resize2d, qnn.conv2d, ...)")
        data, _, kernel = spec.partition(":")
        try:
            d = Layout(data)
        except LayoutError as e:
            raise ValueError(f"data layout '{data}' for {op}: {e}") from None
        spatial = "".join(a for a in "DHW" if a in d.primal)
        if d.name not in (f"NC{spatial}", f"N{spatial}C") and not _BLOCKED_DATA.match(d.name):
            raise ValueError(f"data layout '{data}' for {op} is not supported "
                             f"(NC{spatial or 'HW'}, N{spatial or 'HW'}C or NC{spatial or 'HW'}<k>c)")
        if "kernel_layout" not in cls.LAYOUT_ATTRS:
            if kernel and kernel != "default":
                raise ValueError(f"{op} has no kernel layout to set ('{kernel}')")
            return data, None
        if not kernel or kernel == "default":
            kernel = default_kernel_layout(d, groups, channels)
        try:
            k = Layout(kernel)
        except LayoutError as e:
            raise ValueError(f"kernel layout '{kernel}' for {op}: {e}") from None
        spatial = "".join(a for a in d.primal if a not in "NC")
        if sorted(k.primal) != sorted("OI" + spatial):
            raise ValueError(f"kernel layout '{kernel}' for {op} is not a permutation of OI{spatial}")
        return data, kernel

    def run(self, module, ctx):
        """The whole module: each function that is not primitive, then (after
        --fuse-ops) the primitive functions they call, across the calls."""
        from . import relay_functions
        from .convert_layout_fused import convert_fused
        from .infer_type import ensure_types
        ensure_types(module)
        callers = relay_functions(module, include_primitive=False)
        for func in callers:
            self.convert(func, ctx)
        convert_fused(self, module, ctx, callers)
        ctx.stat(self, "layout-transforms", sum(1 for f in relay_functions(module) for op in f.walk()
                                                if isinstance(op, LayoutTransformOp)))

    def run_on(self, func, ctx):
        """One function alone (nested under a relay.func anchor): its calls'
        callees are not followed."""
        self.convert(func, ctx)
        ctx.stat(self, "layout-transforms", sum(1 for op in func.walk() if isinstance(op, LayoutTransformOp)))

    def convert(self, func, ctx):
        c = Converter(self)
        c.convert_block(func.regions[0].blocks[0])
        self.report(c, ctx)

    def report(self, c, ctx):
        ctx.stat(self, "convs-converted", c.convs)
        ctx.stat(self, "layout-transforms", 0)   # counted at the end; listed in this place
        ctx.stat(self, "ops-adapted", c.adapted)
        ctx.stat(self, "ops-converted", c.converted)


def preferred_layouts(target) -> dict[str, str]:
    """The layouts `--convert-layout` gives when none is named: what the
    target's default schedules are written for.  llvm: NHWC convs (what
    ``build`` converts to at -O3, runtime/build.py LLVM_CONV_LAYOUT: the
    channels are the vectorized last axis); cuda: NCHW convs, the layout
    classic TVM's CUDA strategies are written for (``build`` keeps a
    model's own layout for cuda)."""
    from ....backend.spec import parse_target
    from ....runtime.build import LLVM_CONV_LAYOUT
    conv = {"llvm": LLVM_CONV_LAYOUT or "NCHW", "cuda": "NCHW"}[parse_target(target).kind]
    return {"nn.conv2d": conv}


def default_kernel_layout(d, groups=1, channels=None):
    """The kernel layout TVM pairs with data layout `d` ("default")."""
    spatial = "".join(a for a in d.axes if a.isupper() and a not in "NC")
    m = _BLOCKED_DATA.match(d.name)
    if m:
        f = m.group(2)
        return f"OI{m.group(1)}{f}i{f}o"
    if d.axes[-1] == "C":     # channels last: HWIO, depthwise HWOI
        depthwise = groups > 1 and channels is not None and groups == channels
        return spatial + ("OI" if depthwise else "IO")
    return "OI" + spatial


def permutation(src, dst):
    """perm with dst axis i = src axis perm[i], or None for blocked layouts."""
    from ..layouts import Layout
    s, d = Layout(src), Layout(dst)
    if s.is_blocked() or d.is_blocked() or sorted(s.axes) != sorted(d.axes):
        return None
    return [s.axes.index(a) for a in d.axes]


class Converter:
    def __init__(self, pass_):
        self.desired = {f"relay.{k}": v for k, v in pass_.desired_layouts.items()}
        self.twin = {}        # original value -> (twin value, layout of twin, layout of original)
        # (value, src, dst) -> transformed value; one layer per block being
        # swept, so a transform built inside a branch is never reused outside
        self.memo = ChainMap()
        self.old = []         # converted original ops, erased at the end if unused
        self.maybe_dead = []  # transforms and constants that may end up unused
        self.converted = self.adapted = self.convs = 0
        self.seeds = set()    # ops that make twins before the sweep (convert_layout_fused)
        # values a broadcast may re-lay out through reshape + transform when
        # they have a lower rank: a primitive function's parameters, whose
        # reshape and transform move to the call site (a constant there folds)
        self.relayable = set()

    # -- transforms ----------------------------------------------------------

    def transform(self, v, src, dst, before):
        """`v` (in layout src) as layout dst, built before op `before`."""
        if src == dst:
            return v
        key = (v, src, dst)
        out = self.memo.get(key)
        if out is not None:
            return out
        d = v.defining_op()
        if isinstance(d, LayoutTransformOp) and d.attributes["dst_layout"] == src:
            # transform of a transform: one transform from the inner source
            self.maybe_dead.append(d)
            out = self.transform(d.operands[0], d.attributes["src_layout"], dst, before)
        else:
            op = LayoutTransformOp.build(v, src_layout=src, dst_layout=dst, loc=before.loc)
            before.parent.insert_before(before, op)
            self.maybe_dead.append(op)   # unused if the op that wanted it could not adapt
            out = op.results[0]
            if v.name:   # %w -> %w_hwio: readable IR, and the key a folded weight gets
                out.name = f"{v.name}_{dst.lower()}"
        self.memo[key] = out
        return out

    def back(self, v, before):
        """The original-layout value of a twinned `v`."""
        tv, lay, orig = self.twin[v]
        return self.transform(tv, lay, orig, before)

    def as_layout(self, v, src, dst, before):
        """`v`, read as layout src, in layout dst (through its twin when it has one)."""
        t = self.twin.get(v)
        if t is not None:
            tv, lay, orig = t
            if orig == src:
                return self.transform(tv, lay, dst, before)
            v = self.back(v, before)
        return self.transform(v, src, dst, before)

    # -- the sweep -------------------------------------------------------------

    def convert_block(self, block):
        self.sweep(block)
        # erasing one dead op can kill its operands' producers: sweep to a fixed point
        while erase_if_dead(self.old) + erase_if_dead(self.maybe_dead):
            pass

    def sweep(self, block):
        from ....ir.traits import TERMINATOR
        for op in list(block.ops):
            if op in self.seeds:
                continue
            if op.regions:
                # if / match / fn are opaque themselves, but the ops inside
                # them convert and adapt like any others (TVM converts
                # inside branches); values from outside arrive as twins
                for i, v in enumerate(op.operands):
                    if v in self.twin:
                        op.set_operand(i, self.back(v, op))
                for r in op.regions:
                    for b in r.blocks:
                        self.memo = self.memo.new_child()
                        self.sweep(b)
                        self.memo = self.memo.parents
                continue
            if op.name in self.desired and self.convert_named(op):
                continue
            if not any(v in self.twin for v in op.operands):
                continue
            done = False
            if (isinstance(op, RelayOp) and TERMINATOR not in op.traits and not op.regions
                    and len(op.results) == 1 and not isinstance(op, CallOp)):
                try:
                    done = self.adapt(op)
                except Exception:   # noqa: BLE001 -- an op that cannot take the layout keeps its own
                    done = False
                if done:
                    self.adapted += 1
            if not done:
                for i, v in enumerate(op.operands):
                    if v in self.twin:
                        op.set_operand(i, self.back(v, op))

    def layout_attrs(self, op):
        """(data layout attr, kernel layout attr or None, out layout attr or None)."""
        names = op.LAYOUT_ATTRS
        data = names[0]
        kernel = "kernel_layout" if "kernel_layout" in names else None
        out = "out_layout" if "out_layout" in names else None
        return data, kernel, out

    def convert_named(self, op) -> bool:
        """Rebuild a "layout" op named in the option in its desired layouts."""
        a = op.attributes
        data_attr, kernel_attr, out_attr = self.layout_attrs(op)
        channels = None
        if kernel_attr is not None and op.operands[0].type.is_complete:
            from ..layouts import Layout
            try:
                channels = Layout(a[data_attr]).primal_shape(op.operands[0].type.shape).get("C")
            except Exception:   # noqa: BLE001 -- the type relation reports a bad layout
                channels = None
        want_d, want_k = ConvertLayout.layouts_for(op.op_name, self.desired[op.name],
                                                   a.get("groups", 1), channels)
        return self.rebuild_layout_op(op, want_d, want_k)

    def rebuild_layout_op(self, op, want_d, want_k) -> bool:
        a = op.attributes
        data_attr, kernel_attr, out_attr = self.layout_attrs(op)
        cur_d = a[data_attr]
        cur_o = (a.get(out_attr) if out_attr else "") or cur_d
        cur_k = a[kernel_attr] if kernel_attr else None
        ops = list(op.operands)
        if (cur_d == want_d and cur_o == want_d and (want_k is None or cur_k == want_k)
                and not any(v in self.twin for v in ops[:2])):
            return True
        from ....ir.diagnostics import DiagnosticError
        from ..layouts import LayoutError
        try:
            new_ops = [self.as_layout(ops[0], cur_d, want_d, op)]
            if kernel_attr is not None:
                new_ops.append(self.as_layout(ops[1], cur_k, want_k, op))
        except (DiagnosticError, LayoutError):
            return False    # e.g. 3 channels do not split into NCHW16c: the op keeps its layout
        rest = ops[len(new_ops):]
        new_ops += [self.back(v, op) if v in self.twin else v for v in rest]
        attrs = dict(a)
        attrs[data_attr] = want_d
        if kernel_attr is not None:
            attrs[kernel_attr] = want_k
        if out_attr is not None:
            attrs[out_attr] = ""
        new = self.try_build(op, new_ops, attrs, cur_o, want_d)
        if new is None:
            return False
        self.converted += 1
        if kernel_attr is not None:
            self.convs += 1
        self.record(op, new.results[0], want_d, cur_o)
        return True

    def try_build(self, op, operands, attrs, orig, lay):
        """The op rebuilt on `operands`, inserted before `op`, if its result
        is op's result in layout `lay` (from `orig`); else None.  Of a tuple
        result, the fields of the layout's rank are in `lay`, the others
        (batch_norm's statistics) must come out as they were."""
        from ....ir.diagnostics import DiagnosticError
        from ....ir.types import TupleType
        from ..layouts import Layout, LayoutError
        rtype = op.results[0].type
        fields = rtype.types if isinstance(rtype, TupleType) else (rtype,)
        rank = len(Layout(orig).axes)
        try:
            want = []
            for f in fields:
                shape = getattr(f, "shape", None)
                if shape is not None and len(shape) == rank and orig != lay:
                    shape = Layout(orig).convert_shape(shape, Layout(lay))
                want.append((tuple(shape) if shape is not None else None, getattr(f, "element_type", None)))
            new = type(op).build(*operands, loc=op.loc, **attrs)
        except (DiagnosticError, LayoutError, ValueError, KeyError):
            return None
        t = new.results[0].type
        got = t.types if isinstance(t, TupleType) else (t,)
        if len(got) != len(want) or any(getattr(g, "shape", None) != ws or getattr(g, "element_type", None) is not we
                                         for g, (ws, we) in zip(got, want)):
            new.drop_operands()
            return None
        op.parent.insert_before(op, new)
        new.results[0].name = op.results[0].name
        return new

    def record(self, op, new_value, lay, orig):
        """`new_value` (layout lay) stands for op's result (layout orig)."""
        if lay == orig:
            op.results[0].replace_all_uses_with(new_value)
            op.erase()
            return
        self.twin[op.results[0]] = (new_value, lay, orig)
        self.old.append(op)

    # -- consumers of a twin ---------------------------------------------------------

    def adapt(self, op) -> bool:
        """Give `op` a twin built on its operands' twins; False if it cannot."""
        kind = getattr(op, "LAYOUT", "opaque")
        if isinstance(op, LayoutTransformOp):
            return self.adapt_transform(op)
        if isinstance(op, TupleGetItemOp):
            return self.adapt_get_item(op)
        if kind == "layout":
            return self.adapt_layout_op(op)
        if kind in ("elemwise", "broadcast"):
            return self.adapt_broadcast(op)
        if kind == "axis":
            return self.adapt_axis(op)
        return False

    def adapt_layout_op(self, op) -> bool:
        """A pool / resize not named in the option follows its data's layout."""
        data_attr, kernel_attr, _ = self.layout_attrs(op)
        data = op.operands[0]
        if kernel_attr is not None or data not in self.twin:
            return False
        tv, lay, orig = self.twin[data]
        if op.attributes[data_attr] != orig:
            return False
        return self.rebuild_layout_op(op, lay, None)

    def adapt_get_item(self, op) -> bool:
        """A field of a twinned tuple: in the twin's layout when it has the
        layout's rank, else the same value as before."""
        from ..layouts import Layout
        tv, lay, orig = self.twin[op.operands[0]]
        new = TupleGetItemOp.build(tv, loc=op.loc, **op.attributes)
        op.parent.insert_before(op, new)
        new.results[0].name = op.results[0].name
        t = op.results[0].type
        in_layout = len(getattr(t, "shape", ())) == len(Layout(orig).axes)
        self.record(op, new.results[0], lay if in_layout else orig, orig)
        return True

    def adapt_transform(self, op) -> bool:
        v = op.operands[0]
        tv, lay, orig = self.twin[v]
        if op.attributes["src_layout"] != orig:
            return False
        out = self.transform(tv, lay, op.attributes["dst_layout"], op)
        out_name = op.results[0].name
        op.results[0].replace_all_uses_with(out)
        op.erase()
        if out.name is None:
            out.name = out_name
        return True

    def common_layout(self, op):
        """(L, O) shared by every twinned operand, or None."""
        target = None
        for v in op.operands:
            t = self.twin.get(v)
            if t is None:
                continue
            if target is not None and t[1:] != target:
                return None
            target = t[1:]
        return target

    def adapt_broadcast(self, op) -> bool:
        from ..layouts import Layout, LayoutError
        target = self.common_layout(op)
        if target is None:
            return False
        lay, orig = target
        lo, ll = Layout(orig), Layout(lay)
        rtype = op.results[0].type
        shape = getattr(rtype, "shape", None)
        rank = len(lo.axes)
        if shape is None or len(shape) != rank:
            return False
        new_ops = []
        for v in op.operands:
            t = self.twin.get(v)
            if t is not None:
                if len(v.type.shape) != rank:
                    return False
                new_ops.append(t[0])
                continue
            vs = getattr(v.type, "shape", None)
            if vs is None or None in vs:
                return False
            n = 1
            for d in vs:
                n *= d
            if n == 1 and len(vs) <= rank:
                new_ops.append(v)   # one element broadcasts the same in any layout
                continue
            try:
                if len(vs) == rank:
                    lo.convert_shape(vs, ll)
                    new_ops.append(self.transform(v, orig, lay, op))
                    continue
                c = v.defining_op()
                if isinstance(c, ConstantOp):
                    new_ops.append(self.relayout_constant(c, rank, orig, lay, op))
                elif v in self.relayable and len(vs) < rank:
                    new_ops.append(self.relayout_value(v, rank, orig, lay, op))
                else:
                    return False
            except LayoutError:
                return False
        new = self.try_build(op, new_ops, op.attributes, orig, lay)
        if new is None:
            return False
        self.record(op, new.results[0], lay, orig)
        return True

    def adapt_axis(self, op) -> bool:
        target = self.common_layout(op)
        if target is None:
            return False
        lay, orig = target
        perm = permutation(orig, lay)
        data = op.operands[0]
        if perm is None or data not in self.twin:
            return False
        rank = len(perm)
        from ....ir.types import TupleType
        rtype = op.results[0].type
        first = rtype.types[0] if isinstance(rtype, TupleType) and rtype.types else rtype
        shape = getattr(first, "shape", None)
        if shape is None or len(shape) != rank or len(data.type.shape) != rank:
            return False
        changes = op.relayout(perm)
        if changes is None:
            return False
        new_ops = []
        for v in op.operands:
            t = self.twin.get(v)
            if t is not None:
                new_ops.append(t[0])
            elif len(getattr(v.type, "shape", ())) == rank:
                new_ops.append(self.transform(v, orig, lay, op))
            else:
                new_ops.append(v)    # a 1-d parameter (bias, gamma) or a scalar
        attrs = dict(op.attributes)
        attrs.update(changes)
        new = self.try_build(op, new_ops, attrs, orig, lay)
        if new is None:
            return False
        self.record(op, new.results[0], lay, orig)
        return True

    def relayout_constant(self, c, rank, src, dst, before):
        """A lower-rank constant, broadcast-aligned to `rank` axes, re-laid out."""
        from ..layouts import convert_array
        key = (c.results[0], src, dst)
        out = self.memo.get(key)
        if out is not None:
            return out
        attr = c.attributes["value"]
        arr = attr.array.reshape((1,) * (rank - attr.array.ndim) + attr.array.shape)
        arr = convert_array(arr, src, dst)
        base = attr.key or c.results[0].name
        new = ConstantOp.get(arr.copy(), key=f"{base}_{dst.lower()}" if base else None, loc=c.loc)
        before.parent.insert_before(before, new)
        self.maybe_dead += [c, new]
        if c.results[0].name:
            new.results[0].name = f"{c.results[0].name}_{dst.lower()}"
        out = self.memo[key] = new.results[0]
        return out

    def relayout_value(self, v, rank, src, dst, before):
        """A lower-rank value, broadcast-aligned to `rank` axes (a reshape
        with leading 1s), transformed from layout src to dst."""
        from ..ops.transform import ReshapeOp
        key = (v, "rank", rank, src, dst)
        out = self.memo.get(key)
        if out is not None:
            return out
        shape = [1] * (rank - len(v.type.shape)) + list(v.type.shape)
        r = ReshapeOp.build(v, newshape=shape, loc=before.loc)
        before.parent.insert_before(before, r)
        self.maybe_dead.append(r)
        out = self.memo[key] = self.transform(r.results[0], src, dst, before)
        return out
