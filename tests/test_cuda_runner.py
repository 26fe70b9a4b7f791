"""The pycuda launcher (backend/cuda/runner.py) without a GPU: argument
marshalling, launch configuration and its limits, host plans, and whole
calls through a stand-in driver whose kernels are the tir interpreter."""

import sys

import numpy as np
import pytest

from tvmd.parser import parse_module
from tvmd.backend.abi import signature
from tvmd.backend.cuda.codegen import KernelInfo, generate
from tvmd.backend.cuda.emulator import emulate
from tvmd.backend.cuda.runner import CudaUnavailable, LaunchError, build, host_plan, kernel_args, launch_config

DYN = """
tir.func @dyn(%A: memref<?x8xf32>, %n: index, %s: f32, %B: memref<?x8xf32>) {
  tir.for %i = 0 to %n thread("blockIdx.x") {
    tir.for %j = 0 to 8 thread("threadIdx.x") {
      %v = tir.load %A[%i, %j] : f32
      %w = arith.mulf %v, %s : f32
      tir.store %w, %B[%i, %j] : f32
    }
  }
}
"""


def test_kernel_args_fill_hidden_dims_and_type_scalars():
    f = parse_module(DYN).lookup("dyn")
    sig = signature(f)
    A = np.ones((5, 8), "float32")
    B = np.zeros((5, 8), "float32")
    seen = []
    kargs, scalars = kernel_args(sig, [A, 5, 2.5, B], lambda i, a: seen.append(i) or f"ptr{i}")
    assert seen == [0, 3]
    assert kargs[0] == "ptr0" and kargs[3] == "ptr3"
    assert type(kargs[1]) is np.int64 and kargs[1] == 5
    assert type(kargs[2]) is np.float32 and kargs[2] == np.float32(2.5)
    # hidden dynamic dims, buffer by buffer: A_dim0 then B_dim0
    assert kargs[4:] == [5, 5] and all(type(x) is np.int64 for x in kargs[4:])
    assert scalars == {"n": 5, "s": np.float32(2.5)}
    with pytest.raises(TypeError, match="takes 4 argument"):
        kernel_args(sig, [A, 5], lambda i, a: None)
    with pytest.raises(ValueError, match="shape"):
        kernel_args(sig, [np.ones((5, 7), "float32"), 5, 1.0, B], lambda i, a: None)
    with pytest.raises(TypeError, match="dtype"):
        kernel_args(sig, [A.astype("float64"), 5, 1.0, B], lambda i, a: None)


def test_launch_config_resolves_and_checks_limits():
    f = parse_module(DYN).lookup("dyn")
    _, (info,) = generate(parse_module(DYN))
    assert launch_config(info, {"n": 7}) == ((7, 1, 1), (8, 1, 1))
    assert launch_config(info, {"n": 0}) is None          # an empty grid: nothing to launch
    sig = signature(f)
    with pytest.raises(LaunchError, match="block"):
        launch_config(KernelInfo("k", (1, 1, 1), (32, 32, 2), sig), {})
    with pytest.raises(LaunchError, match="block"):
        launch_config(KernelInfo("k", (1, 1, 1), (1, 1, 65), sig), {})
    with pytest.raises(LaunchError, match="grid"):
        launch_config(KernelInfo("k", (1, 70000, 1), (1, 1, 1), sig), {})
    with pytest.raises(LaunchError, match="shared memory"):
        launch_config(KernelInfo("k", (1, 1, 1), (1, 1, 1), sig, shared_bytes=64 * 1024), {})
    assert launch_config(KernelInfo("k", (2**31 - 1, 65535, 65535), (1024, 1, 1), sig), {}) is not None


def test_dynamic_kernel_runs_through_the_launcher():
    lib = emulate(parse_module(DYN))
    A = np.random.default_rng(0).standard_normal((6, 8)).astype("float32")
    B = np.zeros_like(A)
    out = lib["dyn"](A, 6, 3.0, B)
    assert out is B
    np.testing.assert_array_equal(B, A * np.float32(3.0))
    assert lib.launches == [("dyn", (6, 1, 1), (8, 1, 1))]
    assert all(d.freed for d in lib.drv.allocated)


def test_inputs_are_copied_back_only_when_writable():
    lib = emulate(parse_module(DYN))
    A = np.ones((2, 8), "float32")
    A.flags.writeable = False
    B = np.zeros((2, 8), "float32")
    lib["dyn"](A, 2, 2.0, B)
    np.testing.assert_array_equal(B, 2 * A)


def test_host_plan_steps():
    m = parse_module("""
tir.func @k0(%A: memref<4xf32>, %T: memref<4xf32>) attributes {kernel} {
}
tir.func @h(%A: memref<4xf32>, %B: memref<4xf32>) {
  %T = tir.alloc : memref<4xf32>
  "tir.launch"(%A, %T) {callee = @k0} : (memref<4xf32>, memref<4xf32>) -> ()
  "tir.launch"(%T, %B) {callee = @k0} : (memref<4xf32>, memref<4xf32>) -> ()
}""")
    assert host_plan(m.lookup("h")) == [("alloc", 2, (4,), "float32"), ("launch", "k0", [0, 2]),
                                        ("launch", "k0", [2, 1])]


def test_a_host_function_with_host_compute_is_a_diagnostic():
    from tvmd.ir.diagnostics import DiagnosticError
    m = parse_module("""
tir.func @h(%A: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %x = tir.load %A[%c0] : f32
  tir.store %x, %A[%c0] : f32
  "tir.launch"(%A) {callee = @h} : (memref<4xf32>) -> ()
}""")
    with pytest.raises(DiagnosticError, match="cannot run on the host"):
        host_plan(m.lookup("h"))


def test_build_without_pycuda_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setitem(sys.modules, "pycuda.autoinit", None)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    with pytest.raises(CudaUnavailable, match="pycuda"):
        build(parse_module(DYN))
