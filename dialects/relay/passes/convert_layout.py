"""--convert-layout='nn.conv2d=NHWC[:KERNEL]': TVM's ConvertLayout.

Rewrites every ``nn.conv2d`` to the desired data layout (and kernel layout:
HWIO by default for NHWC, OIHW for NCHW; ``default`` means the same), then
carries the new layout forward through the consumers that do not care, and
transforms back only where a value must have its original layout.

One forward sweep over each function body, in SSA order.  The sweep keeps,
for each original value that has a converted twin, ``(twin, L, O)``: the
twin holds the value in layout ``L`` where the original is in layout ``O``.
For each original op:

* ``nn.conv2d``: a new conv2d in the desired layouts reads its data and
  weight through ``layout_transform`` (a transform of a constant weight is
  left for --fold-constant); its result is the twin of the old result.
* layout-agnostic consumers of a twin get a twin of their own, built on the
  twin: unary elementwise ops (``nn.relu``, ``exp``, ...), ``nn.bias_add``
  with its axis remapped to where the channel axis went, and binary
  broadcast ops whose other operand is a twin in the same layout, a
  single-element tensor (kept as is), a same-rank value (transformed; a
  constant folds later) or a lower-rank constant (re-laid out directly).
* an original ``layout_transform`` of a twin's value becomes a transform of
  the twin, which vanishes when it lands back on the twin's layout.
* any other use of a twin's original (``return``, calls, ops that cannot
  adapt) is rewired to one memoized ``layout_transform`` back to ``O``.

Transforms compose when built: a transform of a transform becomes one
transform from the inner source (or nothing, when the two are inverse).
Old ops left without uses are erased at the end.  Linear: each op is visited
once and each transform is memoized per (value, src, dst).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ....ir.pass_manager import ModulePass
from . import erase_if_dead, relay_functions

SUPPORTED_OPS = ("nn.conv2d",)
DATA_LAYOUTS = ("NCHW", "NHWC")
DEFAULT_KERNEL = {"NHWC": "HWIO", "NCHW": "OIHW"}


@dataclass
class ConvertLayout(ModulePass):
    """Convert conv2d data layouts, transforming only at the boundaries."""

    NAME = "convert-layout"
    EXTRA_OPTIONS = "desired_layouts"
    desired_layouts: dict[str, str] = dataclasses.field(default_factory=dict)

    def validate(self):
        if not self.desired_layouts:
            raise ValueError("needs a desired layout, e.g. --convert-layout='nn.conv2d=NHWC'")
        for op, spec in self.desired_layouts.items():
            if op not in SUPPORTED_OPS:
                raise ValueError(f"cannot convert the layout of '{op}' (supported: {', '.join(SUPPORTED_OPS)})")
            self.layouts_for(op, spec)

    @staticmethod
    def layouts_for(op, spec):
        """'NHWC' or 'NHWC:HWIO' -> (data layout, kernel layout)."""
        data, _, kernel = spec.partition(":")
        if data not in DATA_LAYOUTS:
            raise ValueError(f"data layout '{data}' for {op} is not supported (one of {', '.join(DATA_LAYOUTS)})")
        if not kernel or kernel == "default":
            kernel = DEFAULT_KERNEL[data]
        if sorted(kernel) != sorted("OIHW"):
            raise ValueError(f"kernel layout '{kernel}' for {op} is not a permutation of OIHW")
        return data, kernel

    def run(self, module, ctx):
        from .infer_type import ensure_types
        ensure_types(module)
        for func in relay_functions(module, include_primitive=False):
            self.run_on(func, ctx)

    def run_on(self, func, ctx):
        spec = self.desired_layouts.get("nn.conv2d")
        if spec is None:
            return
        data, kernel = self.layouts_for("nn.conv2d", spec)
        c = Converter(data, kernel)
        c.convert_block(func.regions[0].blocks[0])
        ctx.stat(self, "convs-converted", c.convs)
        ctx.stat(self, "layout-transforms",
                 sum(1 for op in func.regions[0].blocks[0].ops if op.name == "relay.layout_transform"))


class Converter:
    def __init__(self, data_layout, kernel_layout):
        self.data_layout = data_layout
        self.kernel_layout = kernel_layout
        self.twin = {}        # original value -> (twin value, layout of twin, layout of original)
        self.memo = {}        # (value, src, dst) -> transformed value
        self.old = []         # converted original ops, erased at the end if unused
        self.maybe_dead = []  # transforms that composition may have bypassed
        self.convs = 0

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
        if d is not None and d.name == "relay.layout_transform" and d.attributes["dst_layout"] == src:
            # transform of a transform: one transform from the inner source
            self.maybe_dead.append(d)
            out = self.transform(d.operands[0], d.attributes["src_layout"], dst, before)
        else:
            from ..ops.transform import LayoutTransformOp
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
        from ....ir.traits import TERMINATOR
        for op in list(block.ops):
            name = op.name
            if name == "relay.nn.conv2d":
                self.convert_conv(op)
                continue
            if not any(v in self.twin for v in op.operands):
                continue
            done = False
            if TERMINATOR not in op.traits and not op.regions and len(op.results) == 1:
                done = self.adapt(op)
            if not done:
                for i, v in enumerate(op.operands):
                    if v in self.twin:
                        op.set_operand(i, self.back(v, op))
        # erasing one dead op can kill its operands' producers: sweep to a fixed point
        while erase_if_dead(self.old) + erase_if_dead(self.maybe_dead):
            pass

    def convert_conv(self, op):
        from ..ops.nn import Conv2DOp
        a = op.attributes
        cur_d, cur_k = a["data_layout"], a["kernel_layout"]
        cur_o = a["out_layout"] or cur_d
        want_d, want_k = self.data_layout, self.kernel_layout
        data, weight = op.operands
        if cur_d == want_d and cur_k == want_k and cur_o == want_d and data not in self.twin and weight not in self.twin:
            return
        nd = self.as_layout(data, cur_d, want_d, op)
        nw = self.as_layout(weight, cur_k, want_k, op)
        attrs = dict(a)
        attrs.update(data_layout=want_d, kernel_layout=want_k, out_layout="")
        new = Conv2DOp.build(nd, nw, loc=op.loc, **attrs)
        op.parent.insert_before(op, new)
        r = new.results[0]
        r.name = op.results[0].name
        self.convs += 1
        self.record(op, r, want_d, cur_o)

    def record(self, op, new_value, lay, orig):
        """`new_value` (layout lay) stands for op's result (layout orig)."""
        if lay == orig:
            op.results[0].replace_all_uses_with(new_value)
            op.erase()
            return
        self.twin[op.results[0]] = (new_value, lay, orig)
        self.old.append(op)

    def adapt(self, op) -> bool:
        """Give `op` a twin built on its operands' twins; False if it cannot."""
        from ..ops.elemwise import BinaryBroadcastOp
        from ..ops.nn import BiasAddOp
        from ..ops.transform import LayoutTransformOp
        from ..ops.base import OpPattern, RelayOp
        if isinstance(op, LayoutTransformOp):
            return self.adapt_transform(op)
        if isinstance(op, BiasAddOp):
            return self.adapt_bias_add(op)
        if isinstance(op, BinaryBroadcastOp):
            return self.adapt_binary(op)
        if (isinstance(op, RelayOp) and op.PATTERN == OpPattern.ELEMWISE and len(op.operands) == 1
                and op.results[0].type is op.operands[0].type):
            tv, lay, orig = self.twin[op.operands[0]]
            self.build_twin(op, [tv], {}, lay, orig)
            return True
        return False

    def build_twin(self, op, operands, attr_changes, lay, orig):
        attrs = dict(op.attributes)
        attrs.update(attr_changes)
        new = type(op).build(*operands, loc=op.loc, **attrs)
        op.parent.insert_before(op, new)
        new.results[0].name = op.results[0].name
        self.record(op, new.results[0], lay, orig)

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

    def adapt_bias_add(self, op) -> bool:
        from ..layouts import Layout
        data, bias = op.operands
        if data not in self.twin or bias in self.twin:
            return False
        tv, lay, orig = self.twin[data]
        rank = len(data.type.shape)
        lo, ll = Layout(orig), Layout(lay)
        if len(lo.axes) != rank:
            return False
        letter = lo.axes[op.norm_axis(rank)]
        if not letter.isupper() or letter not in ll.axes or letter.lower() in ll.factors:
            return False
        self.build_twin(op, [tv, bias], {"axis": ll.axes.index(letter)}, lay, orig)
        return True

    def adapt_binary(self, op) -> bool:
        from ..layouts import Layout, LayoutError
        rtype = op.results[0].type
        rank = len(rtype.shape)
        target = None
        for v in op.operands:
            t = self.twin.get(v)
            if t is None:
                continue
            if target is not None and t[1:] != target or len(v.type.shape) != rank:
                return False
            target = t[1:]
        lay, orig = target
        lo, ll = Layout(orig), Layout(lay)
        if len(lo.axes) != rank:
            return False
        new_ops = []
        for v in op.operands:
            t = self.twin.get(v)
            if t is not None:
                new_ops.append(t[0])
                continue
            shape = v.type.shape
            if None in shape:
                return False
            n = 1
            for d in shape:
                n *= d
            if n == 1 and len(shape) <= rank:
                new_ops.append(v)   # one element broadcasts the same in any layout
                continue
            try:
                if len(shape) == rank:
                    lo.convert_shape(shape, ll)
                    new_ops.append(self.transform(v, orig, lay, op))
                    continue
                c = v.defining_op()
                if c is None or c.name != "relay.constant":
                    return False
                new_ops.append(self.relayout_constant(c, rank, orig, lay, op))
            except LayoutError:
                return False
        try:
            want = lo.convert_shape(rtype.shape, ll)
        except LayoutError:
            return False
        new = type(op).build(*new_ops, loc=op.loc, **op.attributes)
        if new.results[0].type.shape != want:
            new.drop_operands()
            return False
        op.parent.insert_before(op, new)
        new.results[0].name = op.results[0].name
        self.record(op, new.results[0], lay, orig)
        return True

    def relayout_constant(self, c, rank, src, dst, before):
        """A lower-rank constant, broadcast-aligned to `rank` axes, re-laid out."""
        from ..layouts import convert_array
        from ..ops.function import ConstantOp
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
