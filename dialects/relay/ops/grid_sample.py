"""image.grid_sample: sample an image at the positions a grid gives (ONNX
GridSample, torch.nn.functional.grid_sample).

    %y = image.grid_sample(%x, %grid) {method = "bilinear", padding_mode = "zeros", align_corners = false}

x is (N, C, d1, ..., dr), grid (N, D1, ..., Dr, r) with normalised
coordinates in [-1, 1], the last axis in x, y, z order (innermost spatial
axis first); y is (N, C, D1, ..., Dr).  Per spatial axis of size L, a
normalised g becomes the pixel coordinate

    align_corners:      (g + 1) / 2 * (L - 1)      (-1 and 1 are the corner pixels' centres)
    otherwise:          ((g + 1) * L - 1) / 2      (-1 and 1 are the corner pixels' outer edges)

method: nearest (the closest pixel, halves to even), bilinear (2^r taps),
bicubic (4^r taps, A = -0.75).  padding_mode, for positions outside:
zeros (taps outside read 0), border (the coordinate clamped into
[0, L - 1]), reflection (the coordinate reflected at the borders: the
corner centres with align_corners, else the outer edges, then clamped).
For nearest and bilinear the coordinate is padded before the taps are
chosen; bicubic pads each tap's index (as PyTorch and ONNX's reference do).
No TE compute yet: it runs on numpy (the build says so once).  Pattern:
opaque.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import BOOL, enum
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from .base import OpPattern, RelayOp, tensor_type

np = lazy_module("numpy")


class GridSampleOp(RelayOp):
    __slots__ = ()
    name = "relay.image.grid_sample"
    OPERANDS = ("data", "grid")
    ATTRS = {"method": Attr(enum("bilinear", "nearest", "bicubic"), "bilinear"),
             "padding_mode": Attr(enum("zeros", "border", "reflection"), "zeros"),
             "align_corners": Attr(BOOL, False)}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x, g):
        tensor_type(self, x)
        tensor_type(self, g, "grid")
        r = x.rank - 2
        if r < 1 or g.rank != r + 2 or g.shape[-1] not in (None, r):
            raise self.error(f"expects data (N, C, d1..dr) and a grid (N, D1..Dr, r), got {x} and {g}")
        if not T.is_float(x.element_type) or not T.is_float(g.element_type):
            raise self.error(f"expects float data and grid, got {x} and {g}")
        n = x.shape[0] if x.shape[0] is not None else g.shape[0]
        return x.with_shape((n, x.shape[1]) + tuple(g.shape[1:-1]))

    def compute(self, x, grid):
        method = self.attributes["method"]
        pad = self.attributes["padding_mode"]
        corners = self.attributes["align_corners"]
        r = x.ndim - 2
        sizes = x.shape[2:]
        # coordinates per spatial axis, outermost first: grid's last axis is x (innermost) first
        coords = [_unnormalise(grid[..., r - 1 - a].astype(np.float64), sizes[a], corners) for a in range(r)]
        n_idx = np.arange(x.shape[0]).reshape((-1,) + (1,) * r)
        xf = x.astype(np.float64)
        if method == "bicubic":
            out = _cubic(xf, coords, sizes, pad, corners, n_idx)
        else:
            coords = [_pad_coord(c, L, pad, corners) for c, L in zip(coords, sizes)]
            if method == "nearest":
                idx = [np.rint(c) for c in coords]   # rint: halves to even
                out = _taps(xf, idx, sizes, n_idx)
            else:
                out = 0.0
                lo = [np.floor(c) for c in coords]
                fr = [c - f for c, f in zip(coords, lo)]
                for corner in range(1 << r):
                    w = 1.0
                    idx = []
                    for a in range(r):
                        up = (corner >> a) & 1
                        idx.append(lo[a] + up)
                        w = w * (fr[a] if up else 1.0 - fr[a])
                    out = out + w[:, None] * _taps(xf, idx, sizes, n_idx)
        return np.ascontiguousarray(out.astype(x.dtype))


def _unnormalise(g, size, corners):
    return (g + 1) / 2 * (size - 1) if corners else ((g + 1) * size - 1) / 2


def _reflect(c, lo, hi):
    """c reflected into [lo, hi] (as many times as it takes)."""
    span = hi - lo
    if span <= 0:
        return np.zeros_like(c) + lo
    d = np.abs(c - lo)
    flips = np.floor(d / span)
    extra = d - flips * span
    return np.where(flips % 2 == 0, lo + extra, hi - extra)


def _pad_coord(c, size, pad, corners):
    if pad == "border":
        return np.clip(c, 0, size - 1)
    if pad == "reflection":
        c = _reflect(c, 0.0, size - 1.0) if corners else _reflect(c, -0.5, size - 0.5)
        return np.clip(c, 0, size - 1)
    return c


def _taps(x, idx, sizes, n_idx):
    """x[n, :, idx...] per output position (N, C, D1..Dr); taps outside read 0."""
    inside = np.ones(idx[0].shape, dtype=bool)
    clipped = []
    for i, L in zip(idx, sizes):
        inside &= (i >= 0) & (i <= L - 1)
        clipped.append(np.clip(i, 0, L - 1).astype(np.int64))
    return np.where(inside[:, None], _gather(x, clipped, n_idx), 0.0)


def _gather(x, idx, n_idx):
    """(N, C, D1..Dr) from x (N, C, d1..dr) at integer positions idx (each N, D1..Dr)."""
    moved = np.moveaxis(x, 1, -1)                              # N, d1..dr, C
    picked = moved[(np.broadcast_to(n_idx, idx[0].shape),) + tuple(idx)]   # N, D1..Dr, C
    return np.moveaxis(picked, -1, 1)


def _cubic_weights(t, a=-0.75):
    """The 4 weights of taps at offsets -1, 0, 1, 2 for a fraction t."""
    def near(s):
        return ((a + 2) * s - (a + 3)) * s * s + 1

    def far(s):
        return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _cubic(x, coords, sizes, pad, corners, n_idx):
    r = len(coords)
    lo = [np.floor(c) for c in coords]
    ws = [_cubic_weights(c - f) for c, f in zip(coords, lo)]
    out = 0.0
    for k in range(4 ** r):
        w = 1.0
        idx = []
        for a in range(r):
            o = (k // 4 ** a) % 4
            w = w * ws[a][o]
            i = lo[a] + (o - 1)
            if pad != "zeros":   # each tap's index padded (border: clamped; reflection: reflected)
                i = np.rint(_pad_coord(i, sizes[a], pad, corners))
            idx.append(i)
        out = out + w[:, None] * _taps(x, idx, sizes, n_idx)
    return out
