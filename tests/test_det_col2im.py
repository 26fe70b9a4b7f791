"""det and col2im against torch (torch.linalg.det, torch.nn.functional.fold:
independent implementations)."""

import numpy as np
import pytest

from tvmd.runtime.build import build

torch = pytest.importorskip("torch")


def shape_text(a):
    return "x".join(map(str, a.shape))


def test_det_matches_torch():
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 4)).astype(np.float32)
    cm = build(f"relay.func @main(%x: tensor<{shape_text(x)}xf32>) {{\n  %d = det(%x)\n  return %d\n}}", fallback=True)
    np.testing.assert_allclose(cm.run(x), torch.linalg.det(torch.from_numpy(x)).numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("image,block,stride,pad,dil", [
    ((5, 5), (2, 2), (1, 1), (0, 0), (1, 1)),
    ((6, 7), (3, 2), (2, 1), (1, 0), (1, 2)),
    ((8, 8), (2, 3), (3, 2), (2, 1), (2, 1)),
])
def test_col2im_matches_torch_fold(image, block, stride, pad, dil):
    counts = [(image[i] + 2 * pad[i] - dil[i] * (block[i] - 1) - 1) // stride[i] + 1 for i in range(2)]
    cols = np.random.default_rng(1).standard_normal((2, 3 * block[0] * block[1], counts[0] * counts[1])).astype(np.float32)
    want = torch.nn.functional.fold(torch.from_numpy(cols), image, block, dilation=dil, padding=pad, stride=stride)
    lst = lambda v: "[" + ", ".join(map(str, v)) + "]"   # noqa: E731
    text = (f"relay.func @main(%c: tensor<{shape_text(cols)}xf32>) {{\n"
            f"  %i = col2im(%c) {{image_shape = {lst(image)}, block_shape = {lst(block)}, strides = {lst(stride)}, "
            f"pads = {lst(list(pad) * 2)}, dilations = {lst(dil)}}}\n  return %i\n}}")
    np.testing.assert_allclose(build(text, fallback=True).run(cols), want.numpy(), rtol=1e-5, atol=1e-5)
