"""ONNX models whose weights live in external data files: read from the
model's folder, and a location outside that folder refused with a located
error (never read)."""

import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def save(tmp_path, location):
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [w])
    folder = tmp_path / "model"
    folder.mkdir()
    path = folder / "m.onnx"
    onnx.save_model(helper.make_model(g), str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    if location != "weights.bin":
        (tmp_path / "secret.bin").write_bytes(np.full(6, 7.0, np.float32).tobytes())
        m = onnx.load(str(path), load_external_data=False)
        for e in m.graph.initializer[0].external_data:
            if e.key == "location":
                e.value = location
        onnx.save(m, str(path))
    return path


def test_weights_from_an_external_file(tmp_path):
    from tvmd.frontend.onnx import from_onnx
    from tvmd.runtime.build import build
    path = save(tmp_path, "weights.bin")
    x = np.ones((2, 3), np.float32)
    got = build(from_onnx(str(path))[0], fallback=False).run(x)
    np.testing.assert_array_equal(got, x + np.arange(6, dtype=np.float32).reshape(2, 3))


def test_a_location_outside_the_models_folder_is_refused(tmp_path):
    path = save(tmp_path, "../secret.bin")
    p = subprocess.run([sys.executable, "-m", "tvmd.tools.run_main", str(path), "--random-inputs"],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "points outside the directory" in p.stderr and "error:" in p.stderr
