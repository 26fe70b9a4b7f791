"""image.grid_sample against torch.nn.functional.grid_sample (an independent
implementation), every method, padding mode and corner convention, 2-d and
3-d; and through the PyTorch frontend."""

import numpy as np
import pytest

from tvmd.runtime.build import build

torch = pytest.importorskip("torch")
F = torch.nn.functional


def relay_grid_sample(x, g, method, pad, corners):
    shape = lambda a: "x".join(map(str, a.shape))   # noqa: E731
    text = f"""relay.func @main(%x: tensor<{shape(x)}xf32>, %g: tensor<{shape(g)}xf32>) {{
  %y = image.grid_sample(%x, %g) {{method = "{method}", padding_mode = "{pad}", align_corners = {str(corners).lower()}}}
  return %y
}}"""
    return build(text, fallback=True).run(x, g)


@pytest.mark.parametrize("method", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("corners", [False, True])
def test_2d_matches_torch(method, pad, corners):
    rng = np.random.default_rng(hash((method, pad, corners)) % 2**32)
    x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    g = rng.uniform(-1.3, 1.3, (2, 4, 6, 2)).astype(np.float32)
    want = F.grid_sample(torch.from_numpy(x), torch.from_numpy(g), mode=method, padding_mode=pad,
                         align_corners=corners).numpy()
    np.testing.assert_allclose(relay_grid_sample(x, g, method, pad, corners), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
def test_3d_matches_torch(method, pad):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 2, 3, 4, 5)).astype(np.float32)
    g = rng.uniform(-1.2, 1.2, (1, 2, 3, 4, 3)).astype(np.float32)
    want = F.grid_sample(torch.from_numpy(x), torch.from_numpy(g), mode=method, padding_mode=pad,
                         align_corners=False).numpy()
    np.testing.assert_allclose(relay_grid_sample(x, g, method, pad, False), want, rtol=1e-5, atol=1e-5)


def test_through_the_pytorch_frontend():
    from tvmd.frontend.pytorch import from_pytorch

    class Warp(torch.nn.Module):
        def forward(self, x, g):
            return F.grid_sample(x, g, mode="bicubic", padding_mode="border", align_corners=True)

    x, g = torch.randn(1, 2, 6, 6), torch.rand(1, 3, 3, 2) * 2 - 1
    mod, _ = from_pytorch(Warp(), example_inputs=(x, g))
    np.testing.assert_allclose(build(mod, fallback=True).run(x.numpy(), g.numpy()), Warp()(x, g).numpy(),
                               rtol=1e-5, atol=1e-5)
