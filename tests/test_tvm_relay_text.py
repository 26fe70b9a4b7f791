"""Classic TVM's Relay text, both ways (frontend/tvm_relay): programs written
in TVM's documented text format run and equal numpy; exporting and reading
back gives the same module; TVM's binary parameter files read byte for byte
as its format describes; errors point into the TVM file."""

import os
import struct

import numpy as np
import pytest

from tvmd.dialects.relay.interpreter import run_function
from tvmd.frontend.tvm_relay import TvmRelayError, import_tvm_relay, load_param_dict, save_param_dict
from tvmd.frontend.tvm_relay.writer import export_tvm_relay
from tvmd.ir.pass_manager import PassManager, instantiate, parse_pipeline
from tvmd.ir.printer import print_module
from tvmd.ir.registry import get_pass_class
from tvmd.runtime.build import build

HERE = os.path.join(os.path.dirname(__file__), "tvm_relay")
RNG = np.random.default_rng(0)


def read(name):
    path = os.path.join(HERE, name)
    with open(path) as f:
        return f.read(), path


def cnn_params():
    return {"conv1_weight": RNG.standard_normal((4, 3, 3, 3)).astype("float32"),
            "bn_gamma": RNG.uniform(0.5, 1.5, 4).astype("float32"), "bn_beta": RNG.standard_normal(4).astype("float32"),
            "bn_mean": RNG.standard_normal(4).astype("float32"), "bn_var": RNG.uniform(0.5, 2, 4).astype("float32"),
            "fc_weight": RNG.standard_normal((10, 16)).astype("float32")}


def cnn_ref(x, p):
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    y = np.einsum("nchwij,ocij->nohw", win, p["conv1_weight"])
    c = lambda v: v[None, :, None, None]   # noqa: E731
    y = (y - c(p["bn_mean"])) / np.sqrt(c(p["bn_var"]) + 1e-5) * c(p["bn_gamma"]) + c(p["bn_beta"])
    y = np.maximum(y, 0).reshape(1, 4, 4, 2, 4, 2).max(axis=(3, 5))
    y = y.reshape(1, 4, 2, 2, 2, 2).mean(axis=(3, 5)).reshape(1, 16)
    y = y @ p["fc_weight"].T + np.arange(10, dtype=np.float32) / 10   # the #[metadata] constant
    e = np.exp(y - y.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_a_cnn_with_metadata_constants_and_a_params_file():
    text, path = read("cnn.txt")
    params = cnn_params()
    blob = save_param_dict(params)
    module = import_tvm_relay(text, path, params=load_param_dict(blob))
    main = next(iter(module.body.ops))
    assert [a.name for a in main.regions[0].blocks[0].args] == ["data"]   # the params became constants
    x = RNG.standard_normal((1, 3, 8, 8)).astype("float32")
    got = build(print_module(module), fallback=False).run(x)
    np.testing.assert_allclose(got, cnn_ref(x, params), rtol=1e-5, atol=1e-6)


def test_the_language_adts_match_closures_if_and_recursion():
    text, path = read("language.txt")
    module = import_tvm_relay(text, path)
    PassManager(instantiate(parse_pipeline("infer-type"), get_pass_class)).run(module)
    x, w = RNG.standard_normal((1, 3, 4, 4)).astype("float32"), RNG.standard_normal((2, 3, 3, 3)).astype("float32")
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.einsum("nchwij,ocij->nohw", np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3)), w)
    y = conv + 1
    for c, branch in ((True, np.maximum(y, 0)), (False, y * 2)):
        out, total = run_function(module, "main", x, w, np.array(c))
        np.testing.assert_allclose(out, branch, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(total, 2 * branch.mean(axis=(0, 2, 3)), rtol=1e-5, atol=1e-6)


def anonymous(module):
    for op in module.walk():
        for r in op.results:
            r.name = None
        for region in op.regions:
            for b in region.blocks:
                for a in b.args:
                    a.name = None
    return print_module(module)


@pytest.mark.parametrize("name", ["cnn.txt", "language.txt"])
def test_export_then_import_is_the_same_module(name):
    text, path = read(name)
    module = import_tvm_relay(text, path)
    exported = export_tvm_relay(module)
    assert exported.startswith('#[version = "0.0.5"]\n')
    assert ("#[metadata]" in exported) == (name == "cnn.txt")
    again = import_tvm_relay(exported, "exported.txt")
    assert anonymous(again) == anonymous(import_tvm_relay(text, path))


def test_params_file_layout_as_tvm_documents_it():
    """Bytes built here from the format (not by our writer) read back."""
    arr = np.array([[1, 2, 3]], dtype="<i8")
    nd = struct.pack("<QQiii", 0xDD5E40F096B4A13F, 0, 1, 0, 2) + struct.pack("<BBH", 0, 64, 1) + \
        struct.pack("<qq", 1, 3) + struct.pack("<q", 24) + arr.tobytes()
    name = b"w"
    blob = struct.pack("<QQQ", 0xF7E58D4F05049CB7, 0, 1) + struct.pack("<Q", 1) + name + struct.pack("<Q", 1) + nd
    got = load_param_dict(blob)
    assert list(got) == ["w"] and got["w"].dtype == np.int64
    np.testing.assert_array_equal(got["w"], arr)
    assert save_param_dict(got) == blob
    with pytest.raises(ValueError, match="not a TVM parameter file"):
        load_param_dict(b"\0" * 32)


@pytest.mark.parametrize("text, where, message", [
    ('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) {\n  add(%x, %y)\n}\n', (3, 11), "unknown variable %y"),
    ('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) {\n  add(%x %x)\n}\n', (3, 10), "unexpected"),
    ('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) {\n  %0 = ones(shape=[3], dtype="float32");\n'
     '  add(%x, %0)\n}\n', (4, 3), "cannot be broadcast"),
    ('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) {\n  %0 = ref(%x);\n  ref_write(%0, 1)\n}\n',
     (4, 3), "writes a tensor<i32> into a reference"),
    ('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float64x]) {\n  %x\n}\n', (2, 15), "unknown dtype"),
])
def test_errors_point_into_the_tvm_text(text, where, message):
    with pytest.raises(Exception) as e:
        import_tvm_relay(text, "m.txt")
    assert message in str(e.value)
    assert e.value.loc.file_line_col() == ("m.txt",) + where


from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from tvmd.ir.diagnostics import DiagnosticError  # noqa: E402


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(["cnn.txt", "language.txt"]), st.data())
def test_mutated_text_is_a_located_error_never_a_traceback(name, data):
    """Cut, duplicate or replace a piece of a valid program: the importer
    reads it or reports a located error."""
    text, path = read(name)
    body = text.split("#[metadata]")[0]
    i = data.draw(st.integers(0, len(body) - 1))
    j = data.draw(st.integers(i, min(len(body), i + 40)))
    piece = data.draw(st.sampled_from(["", body[i:j], "(", ")", "{", "}", "%0", "@main", "1f", ",", ";", "=",
                                       "Tensor[(", "meta[relay.Constant][7]", "match (%x) {", "fn (", "?"]))
    mutated = body[:i] + piece + body[j:]
    try:
        import_tvm_relay(mutated, "m.txt")
    except DiagnosticError as e:
        assert e.loc is not None and e.loc.file_line_col() is not None


@pytest.mark.parametrize("body, where, message", [
    ("300i8", (2, 15), "out of range for int8"),
    ("1e99f", (2, 15), "overflows f32"),
    ("nn.softmax(ones(shape=[2], dtype=\"float32\"), axes=0)", (2, 60), "has no attribute 'axes' (it has: axis)"),
    ("meta[relay.Constant][0]", (2, 15), "has 0 constant(s)"),
])
def test_literals_attributes_and_metadata_are_checked(body, where, message):
    with pytest.raises(TvmRelayError) as e:
        import_tvm_relay('#[version = "0.0.5"]\ndef @main() { ' + body + " }\n", "m.txt")
    assert message in str(e.value)
    assert e.value.loc.file_line_col() == ("m.txt",) + where
