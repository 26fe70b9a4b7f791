"""vision.roi_align (ONNX RoiAlign, "avg") against torchvision.ops.roi_align."""

import numpy as np
import pytest

from tvmd.runtime.build import build

torch = pytest.importorskip("torch")
tv_ops = pytest.importorskip("torchvision.ops")


@pytest.mark.parametrize("half_pixel", [True, False])
@pytest.mark.parametrize("ratio", [0, 2])
def test_avg_matches_torchvision(half_pixel, ratio):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 10, 12)).astype(np.float32)
    corners = rng.uniform(0, 18, (5, 4)).astype(np.float32)
    rois = np.concatenate([np.minimum(corners[:, :2], corners[:, 2:]), np.maximum(corners[:, :2], corners[:, 2:])], 1)
    batch = np.array([0, 1, 1, 0, 1], np.int64)
    text = f"""relay.func @main(%x: tensor<2x3x10x12xf32>, %r: tensor<5x4xf32>, %b: tensor<5xi64>) {{
  %y = vision.roi_align(%x, %r, %b) {{pooled_size = [3, 4], spatial_scale = 0.5, sample_ratio = {ratio}, half_pixel = {str(half_pixel).lower()}}}
  return %y
}}"""
    got = build(text, fallback=True).run(x, rois, batch)
    boxes = torch.from_numpy(np.concatenate([batch[:, None].astype(np.float32), rois], 1))
    want = tv_ops.roi_align(torch.from_numpy(x), boxes, (3, 4), spatial_scale=0.5, sampling_ratio=ratio,
                            aligned=half_pixel)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)
