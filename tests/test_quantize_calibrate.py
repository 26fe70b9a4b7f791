"""Calibration pieces of --quantize: KL divergence (against a direct
transcription of TVM's loop), percentile, weight scales, data sets."""

import math
import os

import numpy as np
import pytest

from tvmd.dialects.relay.passes.quantize.calibrate import percentile_threshold, weight_threshold
from tvmd.dialects.relay.passes.quantize.dataset import load_dataset
from tvmd.dialects.relay.passes.quantize.kl_divergence import divergences, find_scale_by_kl, minimize_kl
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.parser import parse_module


def tvm_minimize_kl(hist, edges, num_bins, nq):
    """MinimizeKL of src/relay/quantize/calibrate.cc, loop for loop."""
    zero, half = num_bins // 2, nq // 2
    divs, thresholds = [], []
    for i in range(half, zero + 1):
        start, stop = zero - i, zero + i + 1
        thresholds.append(edges[stop])
        n = stop - start
        sliced, p = [0] * n, [0.0] * n
        for j in range(num_bins):
            if j <= start:
                p[0] += hist[j]
            elif j >= stop:
                p[-1] += hist[j]
            else:
                sliced[j - start] = hist[j]
                p[j - start] = hist[j]
        m = n // nq
        qb = [float(sum(sliced[j * m:(j + 1) * m])) for j in range(nq)]
        qb[-1] += sum(sliced[nq * m:])
        q = [0.0] * n
        for j in range(nq):
            lo, hi = j * m, (n if j == nq - 1 else (j + 1) * m)
            norm = sum(1 for v in sliced[lo:hi] if v != 0)
            if norm:
                for k in range(lo, hi):
                    if p[k]:
                        q[k] = qb[j] / norm

        def smooth(d, eps=1e-4):
            zeros = sum(1 for v in d if v == 0)
            nonzeros = len(d) - zeros
            if not nonzeros or eps * zeros / nonzeros >= 1:
                return None
            e1 = eps * zeros / nonzeros
            return [v + eps if v == 0 else v - e1 for v in d]

        p, q = smooth(p), smooth(q)
        if q is None or p is None:
            divs.append(math.inf)
            continue
        ps, qs = sum(p), sum(q)
        divs.append(sum((a / ps) * math.log((a / ps) / (b / qs)) for a, b in zip(p, q)))
    return thresholds[int(np.argmin(divs))], divs


@pytest.mark.parametrize("seed", range(12))
def test_kl_matches_tvms_loop(seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(3000) * rng.uniform(0.1, 3)
    if seed % 3 == 0:
        a = np.maximum(a, 0)                     # after a relu: half the mass at 0
    if seed % 4 == 1:
        a = np.concatenate([a, [40.0, -25.0]])   # outliers
    nb, nq = 301, 31
    t = max(abs(a.min()), abs(a.max()))
    hist, edges = np.histogram(a, bins=nb, range=(-t, t))
    edges = edges.astype(np.float32)
    want, want_div = tvm_minimize_kl(list(hist), edges, nb, nq)
    assert minimize_kl(hist, edges, nb, nq) == want
    got_div = divergences(hist.astype(np.float64), nb, nq)
    finite = np.isfinite(want_div)
    np.testing.assert_array_equal(np.isfinite(got_div), finite)
    np.testing.assert_allclose(got_div[finite], np.array(want_div)[finite], rtol=1e-9, atol=1e-12)


def test_kl_threshold_clips_outliers_and_handles_zeros():
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.standard_normal(20000), [60.0]])
    t = find_scale_by_kl(a)
    assert 2.0 < t < 10.0                  # far below the outlier, around the bulk
    assert find_scale_by_kl(np.zeros(10)) == 0.0


def test_percentile():
    a = np.arange(-1000, 1001, dtype=np.float32)
    assert percentile_threshold(a, 0.5) == 500.0
    assert percentile_threshold(a, 1.0) == 1000.0


def test_weight_thresholds():
    w = np.zeros((3, 2, 1, 1), np.float32)
    w[0, 0] = 0.3
    w[1, 1] = -1.5
    assert float(weight_threshold(w, "max", None)) == 1.5
    assert float(weight_threshold(w, "power2", None)) == 2.0
    np.testing.assert_allclose(weight_threshold(w, "power2", 0), [0.5, 2.0, 1.0])   # an all-zero channel: 1
    np.testing.assert_allclose(weight_threshold(w, "max", 0), [0.3, 1.5, 1.0])


MAIN = """relay.func @main(%x: tensor<2x3xf32>, %y: tensor<3xf32>) {
  %0 = add(%x, %y)
  return %0
}"""


def func():
    return parse_module(MAIN, "m.relay").body.first


@pytest.mark.parametrize("arrays,count", [
    ({"x": np.zeros((2, 3)), "y": np.zeros(3)}, 1),                       # one sample
    ({"x": np.zeros((5, 2, 3)), "y": np.zeros((5, 3))}, 5),               # samples on a new axis
    ({"x": np.zeros((6, 3)), "y": np.zeros((3, 3))}, 3),                  # batches of 2; y: 3 samples
])
def test_dataset_shapes(tmp_path, arrays, count):
    np.savez(tmp_path / "d.npz", **arrays)
    samples = load_dataset(str(tmp_path / "d.npz"), func())
    assert len(samples) == count
    assert samples[0][0].shape == (2, 3) and samples[0][0].dtype == np.float32


def test_dataset_folder(tmp_path):
    for i in range(3):
        np.savez(tmp_path / f"s{i}.npz", x=np.full((2, 3), i), y=np.zeros(3))
    (tmp_path / "notes.txt").write_text("not data")
    samples = load_dataset(str(tmp_path), func())
    assert [float(s[0][0, 0]) for s in samples] == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("arrays,message", [
    ({"x": np.zeros((2, 3)), "y": np.zeros(3), "z": np.zeros(1)}, "array 'z' names no parameter of @main"),
    ({"x": np.zeros((2, 3))}, "has no array 'y' for parameter %y"),
    ({"x": np.zeros((2, 4)), "y": np.zeros(3)}, "fits parameter %x : tensor<2x3xf32> as neither"),
    ({"x": np.zeros((4, 2, 3)), "y": np.zeros((2, 3))}, "arrays give different sample counts"),
])
def test_dataset_errors_are_diagnostics(tmp_path, arrays, message):
    np.savez(tmp_path / "d.npz", **arrays)
    with pytest.raises(DiagnosticError, match=message.replace("%", "%")):
        load_dataset(str(tmp_path / "d.npz"), func())


def test_unreadable_and_empty_datasets(tmp_path):
    (tmp_path / "bad.npz").write_bytes(b"this is no zip file")
    with pytest.raises(DiagnosticError, match="cannot read dataset file"):
        load_dataset(str(tmp_path / "bad.npz"), func())
    os.mkdir(tmp_path / "empty")
    with pytest.raises(DiagnosticError, match="holds no .npz files"):
        load_dataset(str(tmp_path / "empty"), func())
    np.savez(tmp_path / "obj.npz", x=np.array([object()], dtype=object))
    with pytest.raises(DiagnosticError, match="cannot read dataset file"):
        load_dataset(str(tmp_path / "obj.npz"), func())
