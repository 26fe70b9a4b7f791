"""A compiled model as a shared library with a C header (runtime/export.py):
a C program built with cc calls it and gets numpy's numbers; Python loads
it back without a compiler."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tvmd.parser import parse_module
from tvmd.runtime.build import build
from tvmd.runtime.executor import reference_run
from tvmd.runtime.export import ExportError, load_library

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CNN = os.path.join(ROOT, "examples", "cnn.relay")
CC = shutil.which("cc") or shutil.which("gcc")

C_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include "cnn.h"

int main(int argc, char **argv) {
    static float image[1 * 3 * 16 * 16], out[1 * 8 * 16 * 16];
    FILE *f = fopen(argv[1], "rb");
    if (!f || fread(image, sizeof image, 1, f) != 1) return 2;
    fclose(f);
    cnn_run(image, out);
    cnn_run(image, out);   /* twice: the static arena is reused */
    f = fopen(argv[2], "wb");
    if (!f || fwrite(out, sizeof out, 1, f) != 1) return 3;
    fclose(f);
    return 0;
}
"""


def reference(x):
    text = open(CNN).read()
    return reference_run(parse_module(text, CNN), "main", x)[0]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    if CC is None:
        pytest.skip("no C compiler (cc) on this machine: exporting links with one")
    d = tmp_path_factory.mktemp("export")
    cm = build(open(CNN).read(), progress=False, source_name=CNN)
    header = cm.export_library(d / "cnn.so")
    return d, header


def test_a_c_program_calls_the_library(exported):
    d, header = exported
    assert os.path.basename(header) == "cnn.h"
    text = open(header).read()
    assert "void cnn_run(const float *image, float *out0);" in text
    assert "float32[1][3][16][16]" in text
    (d / "main.c").write_text(C_MAIN)
    exe = d / "main"
    r = subprocess.run([CC, "-O1", "-o", str(exe), str(d / "main.c"), "-I", str(d), "-L", str(d), "-l:cnn.so",
                        f"-Wl,-rpath,{d}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    x = np.random.default_rng(3).standard_normal((1, 3, 16, 16)).astype(np.float32)
    x.tofile(d / "x.bin")
    r = subprocess.run([str(exe), str(d / "x.bin"), str(d / "y.bin")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    y = np.fromfile(d / "y.bin", np.float32).reshape(1, 8, 16, 16)
    np.testing.assert_allclose(y, reference(x), rtol=1e-4, atol=1e-5)


def test_python_loads_the_library_without_a_compiler(exported, monkeypatch):
    d, _ = exported
    monkeypatch.setenv("PATH", "")      # no cc to be found
    m = load_library(d / "cnn.so")
    x = np.random.default_rng(4).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.testing.assert_allclose(m.run(x), reference(x), rtol=1e-4, atol=1e-5)
    out = np.empty((1, 8, 16, 16), np.float32)
    assert m.run(x, out=out) is out
    with pytest.raises(ValueError, match="expected float32"):
        m.run(x.astype(np.float64))


def test_a_model_that_is_not_one_native_function_is_not_exported(tmp_path, monkeypatch):
    from tvmd.conversion.relay_to_te import strategies
    monkeypatch.delitem(strategies.STRATEGIES, "nn.relu")
    cm = build(open(CNN).read(), progress=False)
    with pytest.raises(ExportError, match="interpreter"):
        cm.export_library(tmp_path / "cnn.so")
    assert not os.path.exists(tmp_path / "cnn.so")


def test_tvm_translate_emits_a_shared_library(tmp_path):
    if CC is None:
        pytest.skip("no C compiler (cc) on this machine: exporting links with one")
    out = tmp_path / "net.so"
    r = subprocess.run([sys.executable, "-m", "tvmd.tools.translate_main", CNN, "--emit=shared-lib", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert out.exists() and (tmp_path / "net.h").exists()
    x = np.random.default_rng(5).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.testing.assert_allclose(load_library(out).run(x), reference(x), rtol=1e-4, atol=1e-5)
