"""dft (ONNX DFT) against torch.fft, an independent FFT: the four
inverse / one-sided cases, cut and zero-padded lengths, complex input."""

import numpy as np
import pytest

from tvmd.runtime.build import build

torch = pytest.importorskip("torch")


def run_dft(x, **attrs):
    shape = "x".join(map(str, x.shape))
    text = "\n".join([f"relay.func @main(%x: tensor<{shape}xf32>) {{",
                      "  %y = dft(%x) {" + ", ".join(f"{k} = {str(v).lower()}" for k, v in attrs.items()) + "}",
                      "  return %y", "}"])
    return build(text, fallback=True).run(x)


def as_pair(z):
    z = z.numpy()
    return np.stack([z.real, z.imag], axis=-1)


RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 8, 5)).astype(np.float32)      # a batch of 3 signals of 8 x 5


@pytest.mark.parametrize("n", [0, 6, 11])
def test_forward_and_inverse_complex(n):
    z = X + 1j * RNG.standard_normal(X.shape).astype(np.float32)
    pair = np.stack([z.real, z.imag], axis=-1).astype(np.float32)
    t = torch.from_numpy(z.astype(np.complex64))
    size = n or None
    np.testing.assert_allclose(run_dft(pair, axis=1, length=n), as_pair(torch.fft.fft(t, n=size, dim=1)),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(run_dft(pair, axis=2, length=n, inverse=True),
                               as_pair(torch.fft.ifft(t, n=size, dim=2)), rtol=1e-4, atol=1e-5)


def test_one_sided_forward_and_inverse():
    real = X[..., None]
    np.testing.assert_allclose(run_dft(real, axis=1, onesided=True),
                               as_pair(torch.fft.rfft(torch.from_numpy(X), dim=1)), rtol=1e-4, atol=1e-4)
    spectrum = torch.fft.rfft(torch.from_numpy(X), dim=2)
    half = np.ascontiguousarray(as_pair(spectrum).astype(np.float32))
    got = run_dft(half, axis=2, inverse=True, onesided=True)
    np.testing.assert_allclose(got[..., 0], torch.fft.irfft(spectrum, n=2 * (half.shape[2] - 1), dim=2).numpy(),
                               rtol=1e-4, atol=1e-5)


def test_onnx_stft_matches_torch_stft():
    """ONNX STFT (frames by one take, a window, a one-sided dft) against
    torch.stft without centring."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from tvmd.frontend.onnx import from_onnx
    length, step, n = 16, 6, 64
    window = np.hanning(length).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("STFT", ["x", "step", "window"], ["y"], onesided=1)], "stft",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, n, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor("step", TensorProto.INT64, [], [step]),
         helper.make_tensor("window", TensorProto.FLOAT, [length], window.tolist())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = RNG.standard_normal((2, n, 1)).astype(np.float32)
    got = build(from_onnx(model)[0], fallback=True).run(x)
    want = torch.stft(torch.from_numpy(x[..., 0]), n_fft=length, hop_length=step, win_length=length,
                      window=torch.from_numpy(window), center=False, onesided=True, return_complex=True)
    np.testing.assert_allclose(got, as_pair(want.transpose(1, 2)), rtol=1e-4, atol=1e-4)
