"""The model zoo (tvmd/testing/onnx_zoo.py), small variants: each imported
with from_onnx, compiled whole (no interpreter fallback), run, and every
output compared with onnxruntime; a static model runs as one native entry."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from tvmd.frontend.onnx import from_onnx  # noqa: E402
from tvmd.runtime.build import build  # noqa: E402
from tvmd.testing.onnx_zoo import ZOO  # noqa: E402

TOL = 1e-4


def ort_outputs(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_small_matches_onnxruntime(name):
    model, feeds = ZOO[name](small=True)
    onnx.checker.check_model(model, full_check=True)
    module, _ = from_onnx(model)
    cm = build(module, fallback=False, progress=False)
    assert cm.interpreted == []
    assert cm.executor.program.entry is not None, cm.executor.program.entry_why
    got = cm.run_list(*[feeds[n] for n in cm.input_names])
    want = ort_outputs(model, feeds)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, (i, g.shape, w.shape, g.dtype, w.dtype)
        scale = max(1.0, float(np.max(np.abs(w))))
        np.testing.assert_allclose(g, w, rtol=TOL, atol=TOL * scale, err_msg=f"{name} output {i}")
