"""Data layouts: ``NCHW``, ``NHWC``, blocked ``NCHW16c``, kernels ``OIHW``, ``HWIO``.

An upper-case letter is a primal axis; a lower-case letter with a factor
is a sub-axis split off its primal axis, so in ``NCHW16c`` the channel index
is ``C * 16 + c``.  A layout converts arrays and shapes to and from its primal
form (the upper-case axes in the order they appear).
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"(\d*)([A-Za-z])")


class LayoutError(ValueError):
    pass


class Layout:
    __slots__ = ("name", "axes", "factors")
    _cache: dict = {}

    def __new__(cls, name: str):
        lay = cls._cache.get(name)
        if lay is not None:
            return lay
        lay = object.__new__(cls)
        pos = 0
        axes, factors = [], {}
        for m in _TOKEN.finditer(name):
            if m.start() != pos:
                raise LayoutError(f"bad layout '{name}'")
            pos = m.end()
            num, ax = m.group(1), m.group(2)
            if ax.isupper():
                if num:
                    raise LayoutError(f"bad layout '{name}': a factor goes before a lower-case sub-axis")
            else:
                if not num or int(num) <= 0:
                    raise LayoutError(f"bad layout '{name}': sub-axis '{ax}' needs a positive factor")
                factors[ax] = int(num)
            if ax in axes:
                raise LayoutError(f"bad layout '{name}': axis '{ax}' appears twice")
            axes.append(ax)
        if pos != len(name) or not axes:
            raise LayoutError(f"bad layout '{name}'")
        for a in factors:
            if a.upper() not in axes:
                raise LayoutError(f"bad layout '{name}': sub-axis '{a}' has no primal axis '{a.upper()}'")
        lay.name = name
        lay.axes = tuple(axes)
        lay.factors = factors
        cls._cache[name] = lay
        return lay

    def __repr__(self):
        return f"Layout({self.name})"

    @property
    def primal(self) -> str:
        return "".join(a for a in self.axes if a.isupper())

    def index(self, axis: str) -> int:
        return self.axes.index(axis)

    def has(self, axis: str) -> bool:
        return axis in self.axes

    def is_blocked(self) -> bool:
        return bool(self.factors)

    def same_axes(self, other: "Layout") -> bool:
        return sorted(self.primal) == sorted(other.primal)

    # -- shapes ------------------------------------------------------------------

    def primal_shape(self, shape) -> dict:
        """Axis letter -> full size, from a shape in this layout."""
        if len(shape) != len(self.axes):
            raise LayoutError(f"layout {self.name} has {len(self.axes)} axes but the shape has {len(shape)}")
        sizes = dict(zip(self.axes, shape))
        out = {}
        for a in self.axes:
            if a.isupper():
                f = self.factors.get(a.lower())
                d = sizes[a]
                out[a] = None if d is None else (d * f if f else d)
        return out

    def shape_from_primal(self, sizes: dict):
        out = []
        for a in self.axes:
            if a.isupper():
                d = sizes[a]
                f = self.factors.get(a.lower())
                if f and d is not None:
                    if d % f:
                        raise LayoutError(f"axis {a} of size {d} does not split by {f} for layout {self.name}")
                    d //= f
                out.append(d)
            else:
                out.append(self.factors[a])
        return tuple(out)

    def convert_shape(self, shape, dst: "Layout"):
        return dst.shape_from_primal(self.primal_shape(shape))

    # -- arrays ------------------------------------------------------------------

    def to_primal(self, arr):
        """Array in this layout -> array over the primal axes (in self.primal order)."""
        order, merged = [], []
        for a in self.axes:
            if a.isupper():
                order.append(self.axes.index(a))
                if a.lower() in self.factors:
                    order.append(self.axes.index(a.lower()))
        arr = arr.transpose(order)
        shape = []
        i = 0
        for a in self.primal:
            if a.lower() in self.factors:
                shape.append(arr.shape[i] * arr.shape[i + 1])
                i += 2
            else:
                shape.append(arr.shape[i])
                i += 1
        merged = arr.reshape(shape)
        return merged

    def from_primal(self, arr, primal_order: str):
        """Array over primal axes in `primal_order` -> array in this layout."""
        perm = [primal_order.index(a) for a in self.primal]
        arr = arr.transpose(perm)
        names, shape = [], []
        for a, d in zip(self.primal, arr.shape):
            f = self.factors.get(a.lower())
            if f:
                if d % f:
                    raise LayoutError(f"axis {a} of size {d} does not split by {f}")
                names += [a, a.lower()]
                shape += [d // f, f]
            else:
                names.append(a)
                shape.append(d)
        arr = arr.reshape(shape)
        return arr.transpose([names.index(a) for a in self.axes])


def convert_array(arr, src: str, dst: str):
    s, d = Layout(src), Layout(dst)
    if not s.same_axes(d):
        raise LayoutError(f"cannot convert layout {src} to {dst}: different axes")
    return d.from_primal(s.to_primal(arr), s.primal)
