"""The threshold that minimises KL divergence (TVM's _find_scale_by_kl / MinimizeKL).

TensorRT's calibration (Migacz, "8-bit inference with TensorRT", GTC 2017),
in the variant MXNet wrote and TVM adopted (src/relay/quantize/calibrate.cc):

1. Histogram x in ``num_bins`` (8001) bins over ``[-t, t]``, ``t = max|x|``;
   the zero bin is ``num_bins // 2``.
2. For each candidate half-width ``i`` from ``num_quantized_bins // 2`` (127)
   to the zero bin: the window ``[zero - i, zero + i]`` of ``2i + 1`` bins and
   the threshold ``edges[zero + i + 1]``.
   * ``p``: the window, with everything left of it (and its first bin) added
     to its first bin and everything right of it to its last;
   * ``sliced``: the window as it is, except that its first bin counts 0
     (TVM's loop never fills it);
   * ``q``: ``sliced`` merged into ``num_quantized_bins`` groups of
     ``len // num_quantized_bins`` bins (the last takes the rest), each
     group's total spread evenly over the group's non-empty bins of
     ``sliced``, and kept only where ``p`` is non-empty;
   * both smoothed (zeros get eps = 1e-4, the others give up as much in
     total), normalised, and ``KL(p || q) = sum p log(p / q)``; a ``q`` that
     cannot be smoothed (all zero) scores +inf.
3. The threshold with the least divergence.

TVM loops over the candidates in C++, O(num_bins) work each.  Here every
quantity is a sum over a group or over the window, taken from prefix sums
of the histogram, so each candidate costs O(num_quantized_bins) and all of
them are one numpy computation (about 30 ms for 8001 bins):

* ``KL = (T1 - T2) / P + log Q - log P`` with ``P``, ``Q`` the smoothed sums,
  ``T1 = sum p~ log p~`` and ``T2 = sum p~ log q~``;
* ``T2`` is a sum over groups, since ``q~`` is constant on a group's non-empty
  bins (and ``eps`` elsewhere);
* ``T1`` needs ``sum (h - e) log(h - e)`` over the window's non-empty bins,
  ``e`` the row's smoothing: a Taylor series in ``e`` over prefix sums of
  ``h log h``, ``log h + 1``, ``1 / h`` and ``1 / h^2`` (error below
  ``e^4 / h^3``, so it is used for ``e <= 1e-2`` -- counts ``h`` are >= 1 --
  and rows with a larger ``e`` are summed directly).

The divergences agree with a direct transcription of TVM's loop to about
1e-12; tests/test_quantize_calibrate.py compares the thresholds chosen.
"""

from __future__ import annotations

EPS = 1e-4


def find_scale_by_kl(arr, num_bins: int = 8001, num_quantized_bins: int = 255) -> float:
    """The KL-optimal threshold for the values `arr` (a float)."""
    import numpy as np
    a = np.asarray(arr, np.float64).reshape(-1)
    if a.size == 0:
        return 0.0
    thres = float(max(abs(a.min()), abs(a.max())))
    if not np.isfinite(thres) or thres == 0.0:
        return thres if np.isfinite(thres) else 0.0
    hist, edges = np.histogram(a, bins=num_bins, range=(-thres, thres))
    return minimize_kl(hist, edges.astype(np.float32), num_bins, num_quantized_bins)


def minimize_kl(hist, edges, num_bins: int, num_quantized_bins: int) -> float:
    """The threshold (an edge of `edges`) of least KL divergence for `hist`."""
    import numpy as np
    div = divergences(np.asarray(hist, np.float64), num_bins, num_quantized_bins)
    best = int(np.argmin(div))          # the first minimum, as std::min_element
    return float(edges[num_bins // 2 + num_quantized_bins // 2 + best + 1])


def divergences(h, num_bins: int, nq: int):
    """KL(p || q) of every candidate half-width, in order (see the docstring)."""
    import numpy as np
    zero = num_bins // 2
    i = np.arange(nq // 2, zero + 1)
    s = zero - i                                    # window start bin
    L = 2 * i + 1                                   # window length
    m = L // nq                                     # bins per group
    nz = (h != 0).astype(np.float64)
    Hc = np.concatenate([[0.0], np.cumsum(h)])      # Hc[j] = sum h[:j]
    Nc = np.concatenate([[0.0], np.cumsum(nz)])
    total = Hc[-1]
    A = Hc[s + 1]                                   # p's first bin: h[0 .. s]
    B = total - Hc[s + L - 1]                       # p's last bin: h[s + L - 1 ..]

    # group boundaries: bins s + j*m for j < nq, and the window's end
    bounds = s[:, None] + np.arange(nq + 1)[None, :] * m[:, None]
    bounds[:, -1] = s + L
    sump = np.diff(Hc[bounds], axis=1)              # p per group, before the end fixes
    cntp = np.diff(Nc[bounds], axis=1)
    hs, hl = h[s], h[s + L - 1]
    # the sliced window: its first bin counts 0
    tot = sump[:, 0] - hs
    norm0 = cntp[:, 0] - nz[s]
    tot = np.concatenate([tot[:, None], sump[:, 1:]], axis=1)
    norm = np.concatenate([norm0[:, None], cntp[:, 1:]], axis=1)
    # p: the outliers go into the window's end bins
    sump[:, 0] += A - hs
    sump[:, -1] += B - hl
    cntp[:, 0] += (A != 0) - nz[s]
    cntp[:, -1] += (B != 0) - nz[s + L - 1]

    has = norm > 0
    v = np.where(has, tot / np.maximum(norm, 1), 0.0)
    nzp = cntp.sum(axis=1)
    nzq = (cntp * has).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ep = EPS * (L - nzp) / nzp
        eq = EPS * (L - nzq) / nzq
        ok = (nzp > 0) & (nzq > 0) & (ep < 1) & (eq < 1)
        ep = np.where(ok, ep, 0.0)
        eq = np.where(ok, eq, 0.0)
        P = total + EPS * (L - nzp) - ep * nzp
        Q = (np.where(has, v, 0.0) * cntp).sum(axis=1) + EPS * (L - nzq) - eq * nzq
        log_eps = np.log(EPS)
        t1 = (_xlogx_sums(h, nz, s + 1, s + L - 1, ep) + _xlogx(A, ep) + _xlogx(B, ep)
              + (L - nzp) * EPS * log_eps)
        w = np.where(has, sump - ep[:, None] * cntp, 0.0)
        t2 = (w * np.log(np.where(has, v - eq[:, None], 1.0))).sum(axis=1) + (P - w.sum(axis=1)) * log_eps
        div = (t1 - t2) / P + np.log(Q) - np.log(P)
    return np.where(ok, div, np.inf)


def _xlogx(x, e):
    """(x - e) log(x - e) where x != 0, else 0."""
    import numpy as np
    with np.errstate(divide="ignore", invalid="ignore"):
        y = x - e
        return np.where(x != 0, y * np.log(np.where(x != 0, y, 1.0)), 0.0)


TAYLOR_MAX = 1e-2


def _xlogx_sums(h, nz, lo, hi, e):
    """sum over bins [lo, hi) with h != 0 of (h - e) log(h - e), per row."""
    import numpy as np
    safe = np.where(nz > 0, h, 1.0)
    terms = [np.where(nz > 0, safe * np.log(safe), 0.0), np.where(nz > 0, np.log(safe) + 1, 0.0),
             nz / safe, nz / (safe * safe)]
    pre = [np.concatenate([[0.0], np.cumsum(t)]) for t in terms]
    f0, f1, f2, f3 = (p[hi] - p[lo] for p in pre)
    out = f0 - e * f1 + e * e / 2 * f2 + e ** 3 / 6 * f3
    for r in np.nonzero(e > TAYLOR_MAX)[0]:
        seg = h[lo[r]:hi[r]]
        seg = seg[seg != 0] - e[r]
        out[r] = float(np.sum(seg * np.log(seg)))
    return out
