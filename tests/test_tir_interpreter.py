"""The tir interpreter against numpy, on hand-written kernels (tests/tir_kernels)."""

import math
import os

import numpy as np
import pytest

from tvmd.dialects.tir.interpreter import run
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.parser import parse_module

KERNELS = os.path.join(os.path.dirname(__file__), "tir_kernels")


def kernel(file, name=None):
    with open(os.path.join(KERNELS, file)) as f:
        m = parse_module(f.read(), file)
    funcs = [op for op in m.body.ops if op.name == "tir.func"]
    return funcs[0] if name is None else m.lookup(name)


def func(text):
    return parse_module(text).body.first


RNG = np.random.default_rng(7)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_add_relu_1d_with_tail_guard():
    a, b = randn(1000), randn(1000)
    c = np.full(1000, np.nan, np.float32)
    out = run(kernel("add_relu_1d.tir"), a, b, c)
    assert out is c
    np.testing.assert_array_equal(c, np.maximum(a + b, 0))


def test_add_relu_2d():
    a, b = randn(24, 40), randn(24, 40)
    c = np.zeros_like(a)
    run(kernel("add_relu_2d.tir"), a, b, c)
    np.testing.assert_array_equal(c, np.maximum(a + b, 0))


def test_tiled_matmul():
    a, b = randn(64, 32), randn(32, 48)
    c = np.full((64, 48), np.nan, np.float32)
    run(kernel("matmul_tiled.tir"), a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_reduction_with_init_and_two_outputs():
    a = randn(16, 50)
    s, m = np.zeros(16, np.float32), np.zeros(16, np.float32)
    out = run(kernel("reduce_sum.tir"), a, s, m)
    assert out[0] is s and out[1] is m
    np.testing.assert_allclose(s, a.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(m, a.max(1))


def test_alloc_intermediate_local_and_large():
    a = randn(8, 32)
    b = np.zeros_like(a)
    run(kernel("alloc_intermediate.tir"), a, b)
    np.testing.assert_allclose(b, 2 * np.exp(a), rtol=1e-6)


def test_intrinsics():
    a = RNG.uniform(0.1, 2, 64).astype(np.float32)
    b = RNG.uniform(-3, 3, 64).astype(np.float32)
    b[:4] = [0.5, 1.5, -2.5, 2.5]     # round half to even
    o = np.zeros((16, 64), np.float32)
    run(kernel("intrinsics.tir"), a, b, o)
    erf = np.array([math.erf(x) for x in b.astype(np.float64)])
    want = [np.exp(a), np.log(a), np.sqrt(a), 1 / np.sqrt(a), np.tanh(b), 1 / (1 + np.exp(-b)), erf,
            np.abs(b), np.floor(b), np.ceil(b), np.rint(b), np.trunc(b), np.sin(b), np.cos(b),
            np.power(a, b), a * b + a]
    for row, w in enumerate(want):
        np.testing.assert_allclose(o[row], w, rtol=1e-5, atol=1e-6, err_msg=f"row {row}")
    assert list(o[10, :4]) == [0.0, 2.0, -2.0, 2.0]


def test_dynamic_bounds_and_index_args():
    f = kernel("dynamic.tir", "scale")
    a = randn(37)
    b = np.zeros(37, np.float32)
    run(f, a, 30, np.float32(0.5), b)
    np.testing.assert_allclose(b[:30], a[:30] * 2 + 0.5, rtol=1e-6)
    assert not b[30:].any()
    c = np.zeros((3, 7), np.float32)
    run(kernel("dynamic.tir", "iota2d"), 3, 7, c)
    np.testing.assert_array_equal(c, np.arange(3)[:, None] * 10 + np.arange(7)[None, :])


def test_vector_loads_and_stores():
    a, b = randn(4, 16), randn(4, 16)
    c = np.zeros_like(a)
    run(kernel("vector.tir"), a, b, c)
    r = (a * b - a).astype(np.float64)
    want = r + np.vectorize(math.erf)(r)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-6)


def test_barrier_runs_threads_in_lockstep():
    a = randn(128)
    b = np.zeros_like(a)
    run(kernel("shared_reverse.tir"), a, b)
    want = np.exp(a.reshape(4, 32)[:, ::-1]).reshape(-1)
    np.testing.assert_allclose(b, want, rtol=1e-6)


def test_thread_loops_without_barrier():
    a, b = randn(1000), randn(1000)
    c = np.zeros_like(a)
    run(kernel("thread_elemwise.tir"), a, b, c)
    np.testing.assert_allclose(c, np.tanh(a + b), rtol=1e-6)


def test_floordiv_floormod_round_toward_minus_infinity():
    f = func("""
tir.func @f(%A: memref<9xindex>, %Q: memref<9xindex>, %R: memref<9xindex>, %T: memref<9xindex>) attributes {num_outputs = 3} {
  tir.for %i = 0 to 9 {
    %a = tir.load %A[%i] : index
    %c = arith.constant -4 : index
    %q = arith.floordivsi %a, %c : index
    %r = arith.floormodsi %a, %c : index
    %t = arith.divsi %a, %c : index
    tir.store %q, %Q[%i] : index
    tir.store %r, %R[%i] : index
    tir.store %t, %T[%i] : index
  }
}""")
    a = np.arange(-4, 5, dtype=np.int64) * 3 + 1
    q, r, t = (np.zeros(9, np.int64) for _ in range(3))
    run(f, a, q, r, t)
    np.testing.assert_array_equal(q, a // -4)
    np.testing.assert_array_equal(r, a % -4)
    np.testing.assert_array_equal(t, np.trunc(a / -4).astype(np.int64))


def test_unordered_float_compare_is_true_on_nan():
    f = func("""
tir.func @f(%A: memref<3xf32>, %O: memref<3xi8>) {
  tir.for %i = 0 to 3 {
    %a = tir.load %A[%i] : f32
    %z = arith.constant 0.0 : f32
    %u = arith.cmpf ult, %a, %z : f32
    %o = arith.cmpf olt, %a, %z : f32
    %ui = arith.extui %u : i1 to i8
    %oi = arith.extui %o : i1 to i8
    %two = arith.constant 2 : i8
    %s = arith.muli %ui, %two : i8
    %r = arith.addi %s, %oi : i8
    tir.store %r, %O[%i] : i8
  }
}""")
    o = np.zeros(3, np.int8)
    run(f, np.array([np.nan, -1, 1], np.float32), o)
    assert list(o) == [2, 3, 0]


def test_out_of_bounds_is_an_error_with_location():
    f = func("""
tir.func @f(%A: memref<4xf32>) {
  tir.for %i = 0 to 5 {
    %z = arith.constant 0.0 : f32
    tir.store %z, %A[%i] : f32
  }
}""")
    with pytest.raises(DiagnosticError, match=r"out of bounds: index \[4\]") as e:
        run(f, np.zeros(4, np.float32))
    assert e.value.loc.file_line_col()[1] == 5


def test_negative_index_does_not_wrap():
    f = func("""
tir.func @f(%A: memref<4xf32>, %B: memref<4xf32>) {
  %m = arith.constant -1 : index
  %v = tir.load %A[%m] : f32
  %c = arith.constant 0 : index
  tir.store %v, %B[%c] : f32
}""")
    with pytest.raises(DiagnosticError, match="out of bounds"):
        run(f, np.zeros(4, np.float32), np.zeros(4, np.float32))


def test_barrier_divergence_is_reported():
    f = func("""
tir.func @f(%A: memref<4xf32>) {
  tir.for %t = 0 to 4 thread("threadIdx.x") {
    %c2 = arith.constant 2 : index
    %p = arith.cmpi slt, %t, %c2 : index
    tir.if %p {
      tir.barrier
    }
  }
}""")
    with pytest.raises(DiagnosticError, match="barrier divergence"):
        run(f, np.zeros(4, np.float32))


def test_argument_checks():
    f = kernel("add_relu_2d.tir")
    a = randn(24, 40)
    with pytest.raises(TypeError, match="dtype float64"):
        run(f, a.astype(np.float64), a, a.copy())
    with pytest.raises(ValueError, match="shape"):
        run(f, a[:3], a, a.copy())
    with pytest.raises(ValueError, match="takes 3 argument"):
        run(f, a, a)
    with pytest.raises(ValueError, match="C-contiguous"):
        big = randn(24, 80)
        run(f, big[:, ::2], a, a.copy())


def test_alloc_reads_uninitialised_as_nan():
    f = func("""
tir.func @f(%O: memref<2xf32>) {
  %T = tir.alloc : memref<2xf32, "local">
  %c0 = arith.constant 0 : index
  %v = tir.load %T[%c0] : f32
  tir.store %v, %O[%c0] : f32
}""")
    o = np.zeros(2, np.float32)
    run(f, o)
    assert np.isnan(o[0])
