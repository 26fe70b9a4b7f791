"""Data movement: layout_transform.

    %t = layout_transform(%x) {src_layout = "NCHW", dst_layout = "NHWC"} : tensor<1x56x56x64xf32>
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import STR
from ....ir.core import Attr
from ..layouts import Layout, LayoutError, convert_array
from .base import OpPattern, RelayOp, tensor_type


class LayoutTransformOp(RelayOp):
    __slots__ = ()
    name = "relay.layout_transform"
    OPERANDS = ("data",)
    ATTRS = {"src_layout": Attr(STR), "dst_layout": Attr(STR)}
    PATTERN = OpPattern.INJECTIVE

    def layouts(self):
        try:
            s, d = Layout(self.attributes["src_layout"]), Layout(self.attributes["dst_layout"])
        except LayoutError as e:
            raise self.error(str(e)) from None
        if not s.same_axes(d):
            raise self.error(f"layouts {s.name} and {d.name} do not have the same axes")
        return s, d

    def type_relation(self, x):
        tensor_type(self, x)
        s, d = self.layouts()
        try:
            return T.TensorType(s.convert_shape(x.shape, d), x.element_type)
        except LayoutError as e:
            raise self.error(str(e)) from None

    def compute(self, x):
        s, d = self.layouts()
        return convert_array(x, s.name, d.name)
