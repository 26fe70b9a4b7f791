"""image.decode (dialects/relay/ops/image_decode.py), ONNX ImageDecoder:
lossless files made from known pixels decode to those pixels, in RGB, BGR
and grayscale order; a file that is no image is an error at the op."""

import io

import numpy as np
import pytest

PIL = pytest.importorskip("PIL.Image")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as oh  # noqa: E402

from tvmd.frontend import onnx_backend  # noqa: E402


def encoded(pixels, fmt):
    buf = io.BytesIO()
    PIL.fromarray(pixels).save(buf, format=fmt)
    return np.frombuffer(buf.getvalue(), np.uint8)


def decoder(pixel_format):
    g = oh.make_graph([oh.make_node("ImageDecoder", ["x"], ["y"], pixel_format=pixel_format)], "g",
                      [oh.make_tensor_value_info("x", TP.UINT8, [None])],
                      [oh.make_tensor_value_info("y", TP.UINT8, None)])
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", 20)])


@pytest.mark.parametrize("fmt", ["PNG", "BMP", "TIFF"])
def test_lossless_files_decode_to_their_pixels(fmt):
    px = np.random.default_rng(0).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    data = encoded(px, fmt)
    for mode in ("compiled", "interpreter"):
        np.testing.assert_array_equal(onnx_backend.prepare(decoder("RGB"), mode=mode).run([data])[0], px)
        np.testing.assert_array_equal(onnx_backend.prepare(decoder("BGR"), mode=mode).run([data])[0],
                                      px[:, :, ::-1])
    gray = onnx_backend.prepare(decoder("Grayscale")).run([data])[0]
    p = px.astype(np.int32)
    want = (p[..., 0] * 299 + p[..., 1] * 587 + p[..., 2] * 114) / 1000     # ITU-R 601 luma
    assert gray.shape == (5, 7, 1) and np.abs(gray[..., 0] - want).max() <= 1


def test_a_file_that_is_no_image_is_an_error():
    from tvmd.ir.diagnostics import DiagnosticError
    with pytest.raises((DiagnosticError, ValueError), match="not an image"):
        onnx_backend.prepare(decoder("RGB"), mode="interpreter").run([np.arange(40, dtype=np.uint8)])
