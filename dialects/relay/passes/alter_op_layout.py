"""--alter-op-layout: give constant weights the layout the llvm kernels read
fastest (the dense half of TVM's AlterOpLayout for x86).

    %y = nn.dense(%x, %w)              %w: relay.constant N x K, x with M >= 16 rows, n | N
      =>
    %y = nn.contrib_dense_pack(%x, %wp) {weight_layout = "NC32n"}
                                       %wp: relay.constant N/n x K x n, wp[jo, k, ji] = w[jo * n + ji, k]

    %y = nn.dense(%x, %w)              x with 4 <= M < 16 rows (or n does not divide N)
      =>
    %y = nn.matmul(%x, %wt)            %wt: relay.constant K x N (w transposed, here)

An int8 dense or NHWC conv2d (i8 data, an i8 constant weight, int32 out)
on a target with VNNI becomes the product over a weight packed in i32
words of four i8 for vpdpbusd: alter_op_layout_vnni.py.  A bf16 dense
summed in float32 over a constant weight cast to bf16 (what
--to-mixed-precision makes) on a target with AVX512-BF16 becomes the
product over words of two bf16 for vdpbf16ps: alter_op_layout_bf16.py.

A GEMM schedule wants, per k, a vector of n adjacent output columns (j),
read from contiguous memory: the weight packed in panels of n columns, each
panel K x n.  Done on the constant at compile time, the packing costs
nothing per run; otherwise the kernel packs the weight on every call (a pass
over it: for BERT's 768 x 3072 weights, 19 MB of traffic per call).
Where no panel width divides N (GPT-2's 50257-word LM head, ShuffleNet's
58 channels), with 16 columns or more, the weight is padded with zero
columns to whole panels (pad_width) and the op's units leave them off:
the kernel tiles whole panels and writes only the N columns (the unpacked
product of such a width ran at 1-5 GFLOP/s: its columns fit no vector
tile; a strided_slice of the padded product after cost a pass over the
output, 21 of 320 ms in a GPT-2 prefill of 512 tokens).  n is
the GEMM tile's width (schedules_gemm.gemm_tile: two vectors of the target,
or one where two do not divide N); option pack-width fixes it (0: from the
host's vector registers).  With fewer rows the product is a matrix-vector
one, which keeps the weight K x N (a contiguous row of columns per k) or,
below 4 rows, N x K (one dot product per output, contiguous in k).
``nn.matmul`` with a constant second operand (not transpose_a) is treated
as the dense it is, and so is a 1x1 ``nn.conv2d`` in NHWC (stride 1, no
padding, one group: the dense of each pixel's channels), which becomes the
packed dense over the NHWC data as it is (its leading axes are the rows).
Any other NHWC ``nn.conv2d`` with one group and a constant HWIO weight
(3x3, 7x7, strided 1x1) gets the weight packed as OHWI{n}o, panels of n
output channels with each panel's taps and input channels contiguous: in
HWIO the n channels a register tile reads sit one input-channel row apart
(2 KiB at 512 channels), a stream that maps to few cache sets (ResNet's
7x7x512 3x3 conv ran at 43 GFLOP/s, packed at 134 on one core).
Run it after fold-constant (weights must be constants) and convert-layout,
and before fuse-ops; runtime/build.py does so for llvm targets at -O3.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir.pass_manager import ModulePass, option
from . import defining_constant, erase_if_dead, relay_functions
from ..ops.conv import Conv2DOp
from ..ops.nn import DenseOp, MatmulOp
from .alter_op_layout_bf16 import pack_bf16
from .alter_op_layout_vnni import pack_int8

MIN_ROWS = 4          # below: a dot product per output, the weight N x K as it is
MIN_PACK_ROWS = 16    # from here: the GEMM tile, the weight packed (schedules_gemm.MIN_PACK_ROWS)
MIN_PAD_COLUMNS = 16  # columns no panel width divides are padded to whole panels from here
MAX_PAD_SHARE = 0.125  # the widest panel is taken while it pads at most this share of the columns


@dataclass
class AlterOpLayout(ModulePass):
    """Pack constant dense/matmul/conv weights for the llvm schedules.

    nn.dense (or nn.matmul, or a 1x1 NHWC nn.conv2d) with a constant weight:
    with 16 or more rows, nn.contrib_dense_pack over the weight packed in
    panels of pack-width columns; a dense with 4 or more, nn.matmul over
    the weight transposed; another NHWC conv2d, its weight as OHWI{n}o.
    Rows known only at run time ('?') count as many: packed (padded), or
    K x N below 16 columns."""

    NAME = "alter-op-layout"
    OP = "relay.func"
    pack_width: int = option(0, "columns per packed weight panel (0: two vector registers of the target)")
    target: str = option("llvm", "the llvm target whose vector registers and int8 dot products to pack for")

    def run(self, module, ctx):
        for func in relay_functions(module, include_primitive=False):
            self.run_on(func, ctx)

    def run_on(self, func, ctx):
        stats = {"dense-pack": 0, "conv1x1-pack": 0, "conv-pack": 0, "dense-to-matmul": 0, "int8-dense-pack": 0,
                 "int8-conv-pack": 0, "bf16-dense-pack": 0}
        self._block(func.regions[0].blocks[0], stats)
        for k, v in stats.items():
            ctx.stat(self, k, v)

    def _vector_unit(self):
        from ....backend.spec import parse_target
        return parse_target(self.target or "llvm").vector_unit()

    def _width(self):
        if self.pack_width > 0:
            return (self.pack_width,)
        lanes = self._vector_unit().lanes
        return (2 * lanes, lanes)

    def _pack_conv(self, op, block, made):
        """A 3x3 (or any non-pixel) NHWC conv with a constant HWIO weight:
        the same conv over the weight in OHWI{n}o, panels of n output
        channels, each panel contiguous (the tile's n channels of every
        tap and input channel in a row), inserted before `op`; None when
        op is no such conv.  In HWIO a tile's weights sit one
        input-channel row apart: 2 KiB at 512 channels, so the stream the
        tile walks maps to few cache sets (ResNet's 7x7x512 3x3 conv: 43
        -> 134 GFLOP/s on one core)."""
        w = _packable_conv_weight(op)
        if w is None:
            return None
        arr = w.attributes["value"].array
        kh, kw, ci, co = arr.shape
        nb = next((c for c in self._width() if co % c == 0), None)
        if nb is None:
            return None
        key = ("conv", w, nb)
        new_w = made.get(key)
        if new_w is None:
            packed = arr.reshape(kh, kw, ci, co // nb, nb).transpose(3, 0, 1, 2, 4)
            new_w = made[key] = _constant_like(w, packed, f"o{nb}")
            block.insert_before(op, new_w)
        attrs = dict(op.attributes)
        attrs.update(kernel_layout=f"OHWI{nb}o", channels=co, kernel_size=(kh, kw))
        new = Conv2DOp.build(op.operands[0], new_w.results[0], loc=op.loc, **attrs)
        block.insert_before(op, new)
        return new

    def _block(self, block, stats):
        made = {}
        dead = []
        for op in list(block.ops):
            for r in op.regions:
                for b in r.blocks:
                    self._block(b, stats)
            int8 = pack_int8(op, block, made, self._vector_unit(), self.pack_width)
            if int8 is not None:
                kind, last = int8
                _replace(op, last, dead)
                stats[kind] += 1
                continue
            bf16 = pack_bf16(op, block, made, self._vector_unit(), self.pack_width)
            if bf16 is not None:
                new, left = bf16
                _replace(op, new, dead, left)
                stats["bf16-dense-pack"] += 1
                continue
            w = _constant_weight(op)
            if w is None:
                conv = self._pack_conv(op, block, made) if isinstance(op, Conv2DOp) else None
                if conv is not None:
                    _replace(op, conv, dead)
                    stats["conv-pack"] += 1
                continue
            rows, (n, _) = _rows(op), _weight_nk(op, w).shape
            widths = self._width()
            nb = next((c for c in widths if n % c == 0), None)
            pad = 0
            if rows is None:
                # rows known at run time (a sequence): packed (padded if need be), or
                # K x N, so that the columns are the vector axis whatever the row count
                rows = MIN_PACK_ROWS if nb is not None or n >= MIN_PAD_COLUMNS else MIN_ROWS
            if nb is None and rows >= MIN_PACK_ROWS and n >= MIN_PAD_COLUMNS:
                # (an LM head's 50257 columns, ShuffleNet's 58 channels):
                # zero columns up to a whole panel, which units leaves off
                nb = pad_width(n, widths)
                pad = -n % nb
            if rows >= MIN_PACK_ROWS and nb is not None:
                kind, key = "dense-pack", ("pack", w, nb)
            elif rows >= MIN_ROWS and isinstance(op, DenseOp):
                kind, key = "dense-to-matmul", ("t", w)
            else:
                continue
            new_w = made.get(key)
            if new_w is None:
                arr = _weight_nk(op, w)
                arr = pack_panels(arr, nb) if kind == "dense-pack" else arr.T
                new_w = made[key] = _constant_like(w, arr, f"p{nb}" if kind == "dense-pack" else "t")
                block.insert_before(op, new_w)
            # (with padding: the panels' zero columns left off by units, not sliced off after)
            units = n if isinstance(op, Conv2DOp) or pad else op.attributes.get("units")
            attrs = {"units": units, "out_dtype": op.attributes.get("out_dtype", "")}
            if isinstance(op, Conv2DOp):
                kind = "conv1x1-pack"
            if kind != "dense-to-matmul":
                from ..ops.nn import DensePackOp
                new = DensePackOp.build(op.operands[0], new_w.results[0], loc=op.loc,
                                        weight_layout=f"NC{nb}n", **attrs)
            else:
                new = MatmulOp.build(op.operands[0], new_w.results[0], loc=op.loc, **attrs)
            block.insert_before(op, new)
            _replace(op, new, dead)
            stats[kind] += 1
        erase_if_dead(dead)


def _replace(op, new, dead, weight=None):
    """`new` (inserted before op) takes op's name and uses; op goes, and
    its weight's ops (its constant unless `weight` says) onto `dead`
    (erased at the end if nothing else reads them)."""
    new.results[0].name = op.results[0].name
    op.results[0].replace_all_uses_with(new.results[0])
    dead.extend(weight or [defining_constant(op.operands[1])])
    op.erase()


def pack_panels(w, nb):
    """w (N x K) as "NC{nb}n": [N'/nb, K, nb], N padded with zero rows to
    whole panels (N'); wp[j / nb, k, j % nb] = w[j, k]."""
    import numpy as np
    n, k = w.shape
    pad = -n % nb
    if pad:
        w = np.concatenate([w, np.zeros((pad, k), w.dtype)])
    return w.reshape((n + pad) // nb, nb, k).transpose(0, 2, 1)


def panel_width(n, rows, lanes, pack_width=0):
    """The panel width of a packed weight of n columns made for a product
    of `rows` rows (None: known at run time) on `lanes`-wide vectors (the
    word forms' and weight-only int8's rule): `pack_width` when set, else
    two vectors of columns (one below MIN_ROWS rows), the first that
    divides n, else pad_width's."""
    few = rows is not None and rows < MIN_ROWS
    widths = (pack_width,) if pack_width > 0 else tuple(f * lanes for f in ((1,) if few else (2, 1)))
    return next((w for w in widths if n % w == 0), None) or pad_width(n, widths)


def pad_width(n, widths):
    """The panel width for n columns no width divides: the widest (the
    most accumulators per tile) while its padding stays within
    MAX_PAD_SHARE of n, else the one that pads least (24 columns: 32 pads
    8 in one panel, 16 pads 8 as well; 17: 16 pads 15, 32 pads 15)."""
    if -n % widths[0] <= MAX_PAD_SHARE * n:
        return widths[0]
    return min(widths, key=lambda w: (-n % w, -w))


def _packable_conv_weight(op):
    """The constant HWIO weight of a float NHWC conv2d with one group (not
    a pixel dense), or None."""
    from ....ir import types as T
    if not _nhwc_one_group(op) or op.attributes["kernel_layout"] != "HWIO" or _is_pixel_dense(op):
        return None
    w = op.operands[1].type
    c = defining_constant(op.operands[1])
    if c is None or not isinstance(w, T.TensorType) or not w.is_static or not T.is_float(w.element_type):
        return None
    return c


def _constant_weight(op):
    """The constant weight of a float dense, or of a matmul or conv2d that
    is one (static shapes; matmul: a 2-d second operand, no transpose_a;
    conv2d: _is_pixel_dense)."""
    from ....ir import types as T
    if isinstance(op, MatmulOp):
        if op.attributes["transpose_a"]:
            return None
    elif isinstance(op, Conv2DOp):
        if not _is_pixel_dense(op):
            return None
    elif not isinstance(op, DenseOp):
        return None
    x, w = op.operands[0].type, op.operands[1].type
    c = defining_constant(op.operands[1])
    # the data may have '?' rows (a sequence); its last axis is the static reduction
    if c is None or not (isinstance(x, T.TensorType) and x.shape and x.shape[-1] is not None
                         and isinstance(w, T.TensorType) and w.is_static):
        return None
    if not x.is_static and isinstance(op, Conv2DOp):
        return None
    if not T.is_float(w.element_type) or x.rank < 2 or (w.rank != 2 and not isinstance(op, Conv2DOp)):
        return None
    return c


def _is_pixel_dense(op):
    """A 1x1 conv2d over NHWC data, stride 1, no padding, one group, its
    output NHWC: each pixel's output channels are a dense of its input
    channels, and the data's leading axes are the rows."""
    a = op.attributes
    w = op.operands[1].type
    klayout = a["kernel_layout"]
    if not _nhwc_one_group(op) or sorted(klayout) != sorted("HWIO") or not getattr(w, "is_static", False):
        return False
    return (tuple(a["strides"]) == (1, 1) and not any(a["padding"])
            and w.shape[klayout.index("H")] == 1 and w.shape[klayout.index("W")] == 1)


def _nhwc_one_group(op):
    """A conv2d over NHWC data, its output NHWC, with one group."""
    a = op.attributes
    return a["data_layout"] == "NHWC" and a["out_layout"] in ("", "NHWC") and a["groups"] == 1


def _rows(op):
    """The data's row count; None when it is known only at run time."""
    rows = 1
    for d in op.operands[0].type.shape[:-1]:
        if d is None:
            return None
        rows *= d
    return rows


def _weight_nk(op, c):
    """The weight as N x K (dense's layout), a view."""
    arr = c.attributes["value"].array
    if isinstance(op, Conv2DOp):
        kl = op.attributes["kernel_layout"]
        return arr.transpose([kl.index(d) for d in "OIHW"])[:, :, 0, 0]
    return arr.T if isinstance(op, MatmulOp) and not op.attributes["transpose_b"] else arr


def _constant_like(c, arr, suffix, element_type=None):
    """A constant of `arr` named after constant c (its resource key and
    name with `suffix`), of c's element type unless `element_type`."""
    import numpy as np
    from ....ir import types as T
    from ..ops.function import ConstantOp
    arr = np.ascontiguousarray(arr)
    attr = c.attributes["value"]
    key = f"{attr.key}_{suffix}" if attr.key else None
    et = element_type or c.results[0].type.element_type
    new = ConstantOp.get(arr, T.TensorType(arr.shape, et), key, loc=c.loc)
    name = c.results[0].name
    if name and not name[0].isdigit():
        new.results[0].name = f"{name}_{suffix}"
    return new
