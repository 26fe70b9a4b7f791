"""Decoding an encoded image (JPEG, PNG, BMP, TIFF, WebP ...): ONNX ImageDecoder.

    %img = image.decode(%bytes) {pixel_format = "RGB"}
        bytes: a 1-d ui8 tensor holding the file; img: ui8 (H, W, 3) in RGB or
        BGR order, or (H, W, 1) for "Grayscale"; H and W are '?' (the file says)

Pillow decodes (an optional dependency: ``pip install pillow``; torchvision
brings it); an image with an alpha channel or a palette is converted to
RGB first.  Numpy, no TE compute.  Pattern: opaque.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import enum
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from .base import OpPattern, RelayOp, tensor_type

np = lazy_module("numpy")


class ImageDecodeOp(RelayOp):
    __slots__ = ()
    name = "relay.image.decode"
    OPERANDS = ("data",)
    ATTRS = {"pixel_format": Attr(enum("RGB", "BGR", "Grayscale"), "RGB")}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x):
        tensor_type(self, x)
        if x.rank != 1 or x.element_type is not T.u8:
            raise self.error(f"expects the encoded file as a 1-d ui8 tensor, got {x}")
        return T.TensorType((None, None, 1 if self.attributes["pixel_format"] == "Grayscale" else 3), T.u8)

    def compute(self, x):
        import io
        try:
            from PIL import Image, UnidentifiedImageError
        except ImportError:
            raise RuntimeError("image.decode needs Pillow (pip install pillow)") from None
        try:
            img = Image.open(io.BytesIO(np.ascontiguousarray(x).tobytes()))
            img.load()
        except (UnidentifiedImageError, OSError, ValueError) as e:
            raise ValueError(f"the bytes are not an image Pillow can decode: {e}") from None
        fmt = self.attributes["pixel_format"]
        if fmt == "Grayscale":
            return np.ascontiguousarray(np.asarray(img.convert("L"), np.uint8)[:, :, None])
        rgb = np.asarray(img.convert("RGB"), np.uint8)
        return np.ascontiguousarray(rgb[:, :, ::-1] if fmt == "BGR" else rgb)
