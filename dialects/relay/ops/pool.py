"""Pools: max/avg over windows, global, and adaptive.

    %p = nn.max_pool2d(%x) {pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1]}
    %a = nn.avg_pool2d(%x) {pool_size = [2, 2], count_include_pad = true}
    %g = nn.global_avg_pool2d(%x)                        : (N, C, 1, 1)
    %q = nn.adaptive_avg_pool2d(%x) {output_size = [7, 7]}

Window pools (nn.max_pool1d/2d/3d, nn.avg_pool1d/2d/3d), TVM's attributes:

    pool_size                 required, one per spatial axis
    strides = [1, ...], dilation = [1, ...]
    padding = [0, ...]        1, ndim or 2*ndim values, printed as befores then afters
    layout                    NCW | NWC, NCHW | NHWC | blocked NCHW16c, NCDHW | NDHWC
    out_layout = ""           "" = layout
    ceil_mode = false         round the output size up; the last window may run past
                              the padding (those positions never count), but a window
                              starting in the trailing padding is dropped (PyTorch's and
                              ONNX's rule; TVM kept it and max-pooled it to -inf)
    count_include_pad = false avg only: divide by the window's positions inside the
                              padded input, not only those inside the input

nn.global_max_pool2d / nn.global_avg_pool2d take `layout`, `out_layout`.
nn.adaptive_{max,avg}_pool{1,2,3}d take `output_size` (one value for all
axes, one per axis, or unset = the input's size), `layout`, `out_layout`;
bin i of n over a size L covers [floor(i L / n), ceil((i + 1) L / n)).

Pattern out-elemwise-fusable (TVM's); layout rule "layout".
"""

from __future__ import annotations

import itertools

from ....ir.attrkinds import BOOL, STR, ints, optional
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from ..layouts import Layout, LayoutError, convert_array
from .base import OpPattern, RelayOp, tensor_type
from .util import ceil_div, padding_kind, spatial_kind

np = lazy_module("numpy")   # parsing and printing never need numpy

SPATIAL = {1: "W", 2: "HW", 3: "DHW"}


class PoolBase(RelayOp):
    __slots__ = ()
    OPERANDS = ("data",)
    PATTERN = OpPattern.OUT_ELEMWISE_FUSABLE
    LAYOUT = "layout"
    LAYOUT_ATTRS = ("layout", "out_layout")
    NDIM = 2

    @property
    def spatial(self):
        return SPATIAL[self.NDIM]

    def layouts(self):
        a = self.attributes
        sp = self.spatial
        try:
            d = Layout(a["layout"])
            o = Layout(a["out_layout"] or a["layout"])
        except LayoutError as e:
            raise self.error(str(e)) from None
        for what, lay in (("layout", d), ("out_layout", o)):
            if sorted(lay.primal) != sorted("NC" + sp):
                raise self.error(f"{what} {lay.name} is not a layout of N, C and {', '.join(sp)}")
        return d, o

    def check_data(self, x):
        tensor_type(self, x)
        d, o = self.layouts()
        if x.rank != len(d.axes):
            raise self.error(f"expects {len(d.axes)}-d data in layout {d.name}, got {x}")
        try:
            return d.primal_shape(x.shape), o
        except LayoutError as e:
            raise self.error(str(e)) from None

    def out_type(self, x, o, sizes):
        try:
            return x.with_shape(o.shape_from_primal(sizes))
        except LayoutError as e:
            raise self.error(str(e)) from None

    def compute(self, x):
        d, o = self.layouts()
        sp = self.spatial
        y = self.compute_primal(convert_array(x, d.name, "NC" + sp))
        return convert_array(y, "NC" + sp, o.name).astype(x.dtype, copy=False)


# -- window pools ----------------------------------------------------------------------

def window_attrs(ndim, avg):
    attrs = {
        "pool_size": Attr(spatial_kind(ndim)),
        "strides": Attr(spatial_kind(ndim), (1,) * ndim),
        "dilation": Attr(spatial_kind(ndim), (1,) * ndim),
        "padding": Attr(padding_kind(ndim), (0,) * (2 * ndim)),
        "layout": Attr(STR, "NC" + SPATIAL[ndim]),
        "out_layout": Attr(STR, ""),
        "ceil_mode": Attr(BOOL, False),
    }
    if avg:
        attrs["count_include_pad"] = Attr(BOOL, False)
    return attrs


def pool_out_size(size, k, s, d, p0, p1, ceil_mode):
    span = size + p0 + p1 - d * (k - 1) - 1
    if not ceil_mode:
        return span // s + 1
    out = ceil_div(span, s) + 1
    # a last window starting in the trailing padding would see no input:
    # drop it, as PyTorch and ONNX do (TVM kept it, giving -inf from max)
    if (out - 1) * s >= size + p0:
        out -= 1
    return out


class WindowPoolOp(PoolBase):
    __slots__ = ()
    AVG = False

    def type_relation(self, x):
        ds, o = self.check_data(x)
        a = self.attributes
        nd = self.NDIM
        ks, st, dl, pad = a["pool_size"], a["strides"], a["dilation"], a["padding"]
        if min(ks + st + dl) < 1 or min(pad) < 0:
            raise self.error("pool_size, strides and dilation must be positive and padding non-negative")
        sizes = {"N": ds["N"], "C": ds["C"]}
        for j, s in enumerate(self.spatial):
            size = ds[s]
            if size is None:
                sizes[s] = None
                continue
            v = pool_out_size(size, ks[j], st[j], dl[j], pad[j], pad[nd + j], a["ceil_mode"])
            if v < 1:
                raise self.error(f"output would be empty along {s}: input {size}, pool_size {ks[j]}, "
                                 f"dilation {dl[j]}, padding {pad[j]}+{pad[nd + j]}")
            sizes[s] = v
        return self.out_type(x, o, sizes)

    def compute_primal(self, x):
        a = self.attributes
        return pool_nd(x, "avg" if self.AVG else "max", a["pool_size"], a["strides"], a["dilation"],
                       a["padding"], a["ceil_mode"], a.get("count_include_pad", False))


def pool_nd(x, kind, ks, strides, dilation, padding, ceil_mode, count_include_pad):
    """Reference pool over the trailing axes of x (N, C, *S)."""
    nd = x.ndim - 2
    ins = x.shape[2:]
    outs = [pool_out_size(ins[j], ks[j], strides[j], dilation[j], padding[j], padding[nd + j], ceil_mode)
            for j in range(nd)]
    # ceil_mode windows may reach past the padding: pad that far, never count it
    reach = [(outs[j] - 1) * strides[j] + dilation[j] * (ks[j] - 1) + 1 for j in range(nd)]
    extra = [max(0, reach[j] - (ins[j] + padding[j] + padding[nd + j])) for j in range(nd)]
    widths = [(0, 0), (0, 0)] + [(padding[j], padding[nd + j] + extra[j]) for j in range(nd)]

    def windows(arr):
        for tap in itertools.product(*[range(k) for k in ks]):
            idx = tuple(slice(t * d, t * d + s * (m - 1) + 1, s) for t, d, s, m in zip(tap, dilation, strides, outs))
            yield arr[(slice(None), slice(None)) + idx]

    if kind == "max":
        low = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
        xp = np.pad(x, widths, constant_values=low)
        out = None
        for w in windows(xp):
            out = w.copy() if out is None else np.maximum(out, w)
        return out
    xp = np.pad(x.astype(np.float64), widths)
    total = sum(windows(xp))
    ones = np.ones((1, 1) + tuple(ins))
    if count_include_pad:
        mask = np.pad(ones, [(0, 0), (0, 0)] + [(padding[j], padding[nd + j]) for j in range(nd)],
                      constant_values=1)
        mask = np.pad(mask, [(0, 0), (0, 0)] + [(0, e) for e in extra])
    else:
        mask = np.pad(ones, widths)
    count = np.maximum(sum(windows(mask)), 1)
    with np.errstate(all="ignore"):
        out = total / count
    if np.issubdtype(x.dtype, np.integer):
        out = np.trunc(out)
    return out


def _window_pool(name, ndim, avg):
    return type(name, (WindowPoolOp,), {
        "__slots__": (), "name": "relay.nn." + name, "NDIM": ndim, "AVG": avg,
        "ATTRS": window_attrs(ndim, avg), "__doc__": f"``nn.{name}(%data)``"})


MaxPool1DOp = _window_pool("max_pool1d", 1, False)
MaxPool2DOp = _window_pool("max_pool2d", 2, False)
MaxPool3DOp = _window_pool("max_pool3d", 3, False)
AvgPool1DOp = _window_pool("avg_pool1d", 1, True)
AvgPool2DOp = _window_pool("avg_pool2d", 2, True)
AvgPool3DOp = _window_pool("avg_pool3d", 3, True)


# -- global and adaptive pools ---------------------------------------------------------------

class AdaptivePoolOp(PoolBase):
    __slots__ = ()
    AVG = False
    GLOBAL = False

    def out_sizes(self, ds):
        sp = self.spatial
        if self.GLOBAL:
            return [1] * len(sp)
        osz = self.attributes.get("output_size")
        if osz is None or len(osz) == 0:
            return [ds[s] for s in sp]
        if len(osz) == 1:
            return list(osz) * len(sp)
        if len(osz) != len(sp):
            raise self.error(f"output_size must have 1 or {len(sp)} values, got {list(osz)}")
        return list(osz)

    def type_relation(self, x):
        ds, o = self.check_data(x)
        outs = self.out_sizes(ds)
        if any(v is not None and v < 1 for v in outs):
            raise self.error(f"output_size must be positive, got {outs}")
        sizes = {"N": ds["N"], "C": ds["C"]}
        sizes.update(zip(self.spatial, outs))
        return self.out_type(x, o, sizes)

    def compute_primal(self, x):
        outs = self.out_sizes(dict(zip(self.spatial, x.shape[2:])))
        ins = x.shape[2:]
        bins = [[(i * L // n, ceil_div((i + 1) * L, n)) for i in range(n)] for L, n in zip(ins, outs)]
        out = np.empty(x.shape[:2] + tuple(outs), dtype=np.float64 if self.AVG else x.dtype)
        for cell in itertools.product(*[range(n) for n in outs]):
            idx = tuple(slice(*bins[j][c]) for j, c in enumerate(cell))
            win = x[(slice(None), slice(None)) + idx]
            ax = tuple(range(2, x.ndim))
            pooled = win.mean(axis=ax, dtype=np.float64) if self.AVG else win.max(axis=ax)
            out[(slice(None), slice(None)) + cell] = pooled
        if self.AVG and np.issubdtype(x.dtype, np.integer):
            out = np.trunc(out)
        return out


def _adaptive(name, ndim, avg, glob=False):
    attrs = {} if glob else {"output_size": Attr(optional(ints()), None)}
    attrs.update({"layout": Attr(STR, "NC" + SPATIAL[ndim]), "out_layout": Attr(STR, "")})
    return type(name, (AdaptivePoolOp,), {
        "__slots__": (), "name": "relay.nn." + name, "NDIM": ndim, "AVG": avg, "GLOBAL": glob,
        "ATTRS": attrs, "__doc__": f"``nn.{name}(%data)``"})


GlobalMaxPool2DOp = _adaptive("global_max_pool2d", 2, False, True)
GlobalAvgPool2DOp = _adaptive("global_avg_pool2d", 2, True, True)
AdaptiveMaxPool1DOp = _adaptive("adaptive_max_pool1d", 1, False)
AdaptiveMaxPool2DOp = _adaptive("adaptive_max_pool2d", 2, False)
AdaptiveMaxPool3DOp = _adaptive("adaptive_max_pool3d", 3, False)
AdaptiveAvgPool1DOp = _adaptive("adaptive_avg_pool1d", 1, True)
AdaptiveAvgPool2DOp = _adaptive("adaptive_avg_pool2d", 2, True)
AdaptiveAvgPool3DOp = _adaptive("adaptive_avg_pool3d", 3, True)
