"""JIT-compiled kernels against the tir interpreter and numpy (rtol 1e-5)."""

import math
import os

import numpy as np
import pytest

from tvmd.dialects.tir.interpreter import run as interpret
from tvmd.parser import parse_module
from tvmd.runtime.ndarray import empty_aligned
from tvmd.backend.llvm import jit

KERNELS = os.path.join(os.path.dirname(__file__), "tir_kernels")
RNG = np.random.default_rng(11)
_cache = {}


def compiled(file):
    """(module, JIT library) for a kernel file, compiled once per test run."""
    if file not in _cache:
        with open(os.path.join(KERNELS, file)) as f:
            m = parse_module(f.read(), file)
        _cache[file] = (m, jit.compile(m))
    return _cache[file]


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def both(file, name, *args):
    """Run kernel `name` compiled and interpreted on copies of `args`; returns
    (compiled outputs, interpreted outputs)."""
    m, lib = compiled(file)
    a1 = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    a2 = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    lib[name](*a1)
    interpret(m.lookup(name), *a2)
    return a1, a2


def test_add_relu_1d():
    a, b = randn(1000), randn(1000)
    got, ref = both("add_relu_1d.tir", "add_relu_1d", a, b, np.zeros(1000, np.float32))
    np.testing.assert_array_equal(got[2], np.maximum(a + b, 0))
    np.testing.assert_array_equal(got[2], ref[2])


def test_add_relu_2d():
    a, b = randn(24, 40), randn(24, 40)
    got, _ = both("add_relu_2d.tir", "add_relu_2d", a, b, np.zeros_like(a))
    np.testing.assert_array_equal(got[2], np.maximum(a + b, 0))


def test_a_raw_cfunc_keeps_its_code_alive():
    """Code held only through a kernel's ctypes `cfunc` is not freed: the
    module sits in a module<->kernel cycle, so the cyclic GC would free it
    at a random moment and the next call would jump into freed memory."""
    import gc
    import weakref
    with open(os.path.join(KERNELS, "add_relu_1d.tir")) as f:
        lib = jit.compile(parse_module(f.read(), "add_relu_1d.tir"))
    held, alive = lib.add_relu_1d.cfunc, weakref.ref(lib)
    del lib
    gc.collect()
    assert alive() is not None
    a, b, c = randn(1000), randn(1000), np.zeros(1000, np.float32)
    held(a.ctypes.data, b.ctypes.data, c.ctypes.data)
    np.testing.assert_array_equal(c, np.maximum(a + b, 0))


def test_tiled_matmul():
    a, b = randn(64, 32), randn(32, 48)
    got, ref = both("matmul_tiled.tir", "matmul", a, b, np.full((64, 48), np.nan, np.float32))
    np.testing.assert_allclose(got[2], a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[2], ref[2], rtol=1e-5, atol=1e-6)


def test_reduction_two_outputs():
    a = randn(16, 50)
    _, lib = compiled("reduce_sum.tir")
    s, m = lib.row_sum_max(a, np.zeros(16, np.float32), np.zeros(16, np.float32))
    np.testing.assert_allclose(s, a.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(m, a.max(1))


def test_alloc_intermediate():
    a = randn(8, 32)
    got, ref = both("alloc_intermediate.tir", "alloc_chain", a, np.zeros_like(a))
    np.testing.assert_allclose(got[1], 2 * np.exp(a), rtol=1e-5)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-5)


def test_intrinsics_match_interpreter():
    a = RNG.uniform(0.1, 2, 64).astype(np.float32)
    b = RNG.uniform(-3, 3, 64).astype(np.float32)
    b[:4] = [0.5, 1.5, -2.5, 2.5]
    got, ref = both("intrinsics.tir", "intrinsics", a, b, np.zeros((16, 64), np.float32))
    np.testing.assert_allclose(got[2], ref[2], rtol=1e-5, atol=1e-6)
    assert list(got[2][10, :4]) == [0.0, 2.0, -2.0, 2.0]


def test_dynamic_sizes_and_scalar_args():
    _, lib = compiled("dynamic.tir")
    for n in (0, 1, 30, 37):
        a = randn(37)
        b = np.zeros(37, np.float32)
        lib.scale(a, n, 0.25, b)
        np.testing.assert_allclose(b[:n], a[:n] * 2 + 0.25, rtol=1e-6)
        assert not b[n:].any()
    c = np.zeros((5, 3), np.float32)
    lib.iota2d(5, 3, c)
    np.testing.assert_array_equal(c, np.arange(5)[:, None] * 10 + np.arange(3)[None, :])


def test_vector_code():
    a, b = randn(4, 16), randn(4, 16)
    got, ref = both("vector.tir", "vec_fms", a, b, np.zeros_like(a))
    r = (a * b - a).astype(np.float64)
    np.testing.assert_allclose(got[2], r + np.vectorize(math.erf)(r), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], ref[2], rtol=1e-6)


def test_thread_loops_run_serially_on_cpu():
    a, b = randn(1000), randn(1000)
    got, _ = both("thread_elemwise.tir", "gpu_add", a, b, np.zeros_like(a))
    np.testing.assert_allclose(got[2], np.tanh(a + b), rtol=1e-5)


INT_OPS = """
tir.func @intops(%A: memref<64xindex>, %B: memref<64xindex>, %O: memref<8x64xindex>) {
  tir.for %i = 0 to 64 {
    %a = tir.load %A[%i] : index
    %b = tir.load %B[%i] : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c6 = arith.constant 6 : index
    %c7 = arith.constant 7 : index
    %q = arith.floordivsi %a, %b : index
    tir.store %q, %O[%c0, %i] : index
    %r = arith.floormodsi %a, %b : index
    tir.store %r, %O[%c1, %i] : index
    %t = arith.divsi %a, %b : index
    tir.store %t, %O[%c2, %i] : index
    %m = arith.remsi %a, %b : index
    tir.store %m, %O[%c3, %i] : index
    %mx = arith.maxsi %a, %b : index
    tir.store %mx, %O[%c4, %i] : index
    %mn = arith.minsi %a, %b : index
    tir.store %mn, %O[%c5, %i] : index
    %lt = arith.cmpi ult, %a, %b : index
    %s = arith.select %lt, %a, %b : index
    tir.store %s, %O[%c6, %i] : index
    %x = arith.xori %a, %b : index
    %sh = arith.shrsi %x, %c1 : index
    tir.store %sh, %O[%c7, %i] : index
  }
}
"""


def test_integer_semantics_match_interpreter():
    m = parse_module(INT_OPS)
    lib = jit.compile(m)
    a = RNG.integers(-50, 50, 64).astype(np.int64)
    b = RNG.integers(1, 9, 64).astype(np.int64) * RNG.choice([-1, 1], 64)
    o1, o2 = np.zeros((8, 64), np.int64), np.zeros((8, 64), np.int64)
    lib.intops(a, b, o1)
    interpret(m.lookup("intops"), a, b, o2)
    np.testing.assert_array_equal(o1, o2)
    np.testing.assert_array_equal(o1[0], a // b)
    np.testing.assert_array_equal(o1[1], a % b)


CASTS_AND_NAN = """
tir.func @casts(%A: memref<6xf32>, %I: memref<6xi32>, %F: memref<6xf64>, %C: memref<6xi8>, %H: memref<6xf32>)
    attributes {num_outputs = 4} {
  tir.for %i = 0 to 6 {
    %a = tir.load %A[%i] : f32
    %t = arith.fptosi %a : f32 to i32
    tir.store %t, %I[%i] : i32
    %d = arith.extf %a : f32 to f64
    %k = arith.index_cast %i : index to i32
    %kf = arith.sitofp %k : i32 to f64
    %s = arith.addf %d, %kf : f64
    tir.store %s, %F[%i] : f64
    %z = arith.constant 0.0 : f32
    %u = arith.cmpf ult, %a, %z : f32
    %o = arith.cmpf one, %a, %z : f32
    %ui = arith.extui %u : i1 to i8
    %oi = arith.extui %o : i1 to i8
    %two = arith.constant 2 : i8
    %x = arith.muli %ui, %two : i8
    %y = arith.addi %x, %oi : i8
    tir.store %y, %C[%i] : i8
    %mx = arith.maximumf %a, %z : f32
    tir.store %mx, %H[%i] : f32
  }
}
"""


def test_casts_and_nan_compares_match_interpreter():
    m = parse_module(CASTS_AND_NAN)
    lib = jit.compile(m)
    a = np.array([1.7, -2.5, 0.0, np.nan, 3.0, -0.5], np.float32)
    outs1 = [np.zeros(6, d) for d in (np.int32, np.float64, np.int8, np.float32)]
    outs2 = [x.copy() for x in outs1]
    lib.casts(a, *outs1)
    interpret(m.lookup("casts"), a, *outs2)
    for k in (1, 2, 3):
        np.testing.assert_array_equal(outs1[k], outs2[k])
    keep = ~np.isnan(a)   # fptosi of NaN is undefined
    np.testing.assert_array_equal(outs1[0][keep], outs2[0][keep])
    assert list(outs1[2]) == [1, 3, 0, 2, 1, 3]
    assert np.isnan(outs1[3][3])


def test_parallel_loops_with_two_threads_and_one(monkeypatch):
    _, lib = compiled("matmul_tiled.tir")
    a, b = randn(64, 32), randn(32, 48)
    results = []
    for n in ("2", "1", "7"):
        monkeypatch.setenv("TVMD_NUM_THREADS", n)
        c = np.zeros((64, 48), np.float32)
        lib.matmul(a, b, c)
        results.append(c)
    np.testing.assert_allclose(results[0], a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])


def test_object_file_round_trip(tmp_path):
    m, _ = compiled("dynamic.tir")
    path = tmp_path / "k.o"
    jit.save_object(m, str(path))
    lib = jit.load_object(str(path))
    a = randn(10)
    b = np.zeros(10, np.float32)
    lib.scale(a, 10, 1.0, b)
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)
    assert set(lib.kernels) == {"scale", "iota2d"}


def test_kernel_argument_errors():
    _, lib = compiled("add_relu_2d.tir")
    k = lib.add_relu_2d
    a = randn(24, 40)
    with pytest.raises(TypeError, match="dtype float64"):
        k(a.astype(np.float64), a, np.zeros_like(a))
    with pytest.raises(ValueError, match="shape"):
        k(a[:2], a, np.zeros_like(a))
    with pytest.raises(ValueError, match="C-contiguous"):
        k(randn(24, 80)[:, ::2], a, np.zeros_like(a))
    with pytest.raises(TypeError, match="takes 3"):
        k(a, a)
    with pytest.raises(ValueError, match="output buffer C overlaps buffer A"):
        k(a, a, a)
    c = k(a, a, np.zeros_like(a))          # inputs may share memory: they are only read
    np.testing.assert_array_equal(c, np.maximum(a + a, 0))
    with pytest.raises(TypeError, match="numpy array"):
        k([1.0], a, np.zeros_like(a))
    with pytest.raises(KeyError, match="no kernel 'nope'"):
        lib["nope"]


def test_misaligned_arrays_are_copied_and_written_back():
    _, lib = compiled("add_relu_2d.tir")
    raw = np.zeros(24 * 40 + 1, np.float32)
    c = raw[1:].reshape(24, 40)           # 4 bytes off: not 64-byte aligned
    assert c.ctypes.data % 64 != 0
    a, b = empty_aligned((24, 40), np.float32), randn(24, 40)
    a[...] = randn(24, 40)
    lib.add_relu_2d(a, b, c)
    np.testing.assert_array_equal(c, np.maximum(a + b, 0))


def test_compile_is_cached_per_module_not_global():
    m, lib = compiled("add_relu_2d.tir")
    lib2 = jit.compile(m)
    assert lib2 is not lib and "add_relu_2d" in lib2


def _relocation_types(obj: bytes):
    """The relocation types of an ELF64 little-endian object (its SHT_RELA sections)."""
    import struct
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    types = set()
    for i in range(shnum):
        sh_type, = struct.unpack_from("<I", obj, shoff + i * shentsize + 4)
        if sh_type != 4:   # SHT_RELA
            continue
        off, size = struct.unpack_from("<QQ", obj, shoff + i * shentsize + 0x18)
        for at in range(off, off + size, 24):
            info, = struct.unpack_from("<Q", obj, at + 8)
            types.add(info & 0xFFFFFFFF)
    return types


def test_object_files_reach_their_data_through_64_bit_relocations():
    """Loaded by MCJIT, an object's code and data may be mapped far apart: a
    32-bit PC-relative relocation (PC32, PLT32, GOTPCREL, 32, 32S) could not
    reach, and llvmlite's LLVM aborts on it (the large code model)."""
    import platform
    if platform.machine() != "x86_64":
        pytest.skip("checks x86-64 relocation types")
    for name in ("dynamic.tir", "matmul_tiled.tir"):
        m, _ = compiled(name)
        types = _relocation_types(jit.emit_object(m))
        assert types and not types & {2, 4, 9, 10, 11, 41, 42}, types
