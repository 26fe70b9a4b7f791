"""The classic TVM Python API (tvmd.classic): TE scripts with only their
imports changed build and compute what numpy computes, the te text they
emit parses back and verifies, and mistakes are clear errors."""

import subprocess
import sys

import numpy as np
import pytest

import tvmd as tvm
from tvmd import te
from tvmd.ir.printer import print_module
from tvmd.ir.verifier import verify
from tvmd.parser import parse_module

N, K, M = 37, 53, 29
RNG = np.random.default_rng(0)


def rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def matmul():
    A = te.placeholder((N, K), name="A")
    B = te.placeholder((K, M), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def sched_plain(s, C):
    pass


def sched_classic(s, C):
    y, x = s[C].op.axis
    (kk,) = s[C].op.reduce_axis
    yo, yi = s[C].split(y, factor=8)
    xo, xi = s[C].split(x, nparts=4)
    s[C].reorder(yo, xo, kk, yi, xi)
    s[C].vectorize(xi)
    s[C].parallel(yo)
    s[C].unroll(yi)


def sched_tile_fuse(s, C):
    y, x = s[C].op.axis
    (kk,) = s[C].op.reduce_axis
    yo, xo, yi, xi = s[C].tile(y, x, 5, 16)
    ko, ki = s[C].split(kk, factor=7)
    s[C].reorder(yo, xo, ko, ki, yi, xi)
    f = s[C].fuse(yo, xo)
    s[C].parallel(f)
    s[C].vectorize(xi)


def sched_cache_write(s, C):
    CL = s.cache_write(C, "local")
    y, x = s[C].op.axis
    yo, xo, yi, xi = s[C].tile(y, x, 4, 8)
    f = s[C].fuse(yo, xo)
    s[C].parallel(f)
    s[CL].compute_at(s[C], f)
    ci, cj = s[CL].op.axis
    (ck,) = s[CL].op.reduce_axis
    s[CL].reorder(ck, ci, cj)
    s[CL].vectorize(cj)


def sched_rfactor(s, C):
    (kk,) = s[C].op.reduce_axis
    ko, ki = s[C].split(kk, factor=8)
    CF = s.rfactor(C, ki)
    s[CF].vectorize(s[CF].op.axis[0])
    s[C].parallel(s[C].op.axis[0])


def sched_cache_read(s, C):
    A = C.op.input_tensors[0]
    AL = s.cache_read(A, "local", [C])
    y, x = s[C].op.axis
    yo, yi = s[C].split(y, factor=4)
    s[AL].compute_at(s[C], yo)


@pytest.mark.parametrize("schedule", [sched_plain, sched_classic, sched_tile_fuse, sched_cache_write,
                                      sched_rfactor, sched_cache_read])
def test_matmul_schedules(schedule):
    A, B, C = matmul()
    s = te.create_schedule(C.op)
    schedule(s, C)
    f = tvm.build(s, [A, B, C], target="llvm")
    a, b = tvm.nd.array(rand(N, K)), tvm.nd.array(rand(K, M))
    c = tvm.nd.array(np.zeros((N, M), "float32"))
    f(a, b, c)
    np.testing.assert_allclose(c.numpy(), a.numpy() @ b.numpy(), rtol=1e-4, atol=1e-4)
    # what it emits is te text that parses back to the same text and verifies
    text = str(s)
    m = parse_module(text)
    verify(m)
    assert print_module(m) == text


def test_the_brief_example_prints_and_names():
    A, B, C = matmul()
    s = te.create_schedule(C.op)
    sched_classic(s, C)
    text = str(s)
    assert text.startswith("te.func @main(%A: tensor<37x53xf32>, %B: tensor<53x29xf32>) -> tensor<37x29xf32>")
    assert "%C = te.compute [%i, %j] reduce [%k: 53] \"sum\"" in text
    assert "%i, %j, %k = te.axes %C" in text
    assert "%i.outer, %i.inner = te.split %i {factor = 8}" in text
    assert "te.split %j {nparts = 4}" in text
    assert "te.reorder %i.outer, %j.outer, %k, %i.inner, %j.inner" in text
    lowered = tvm.lower(s, [A, B, C], simple_mode=True)
    t = str(lowered)
    assert "tir.func @main(%A: memref<37x53xf32>, %B: memref<53x29xf32>, %C: memref<37x29xf32>)" in t
    assert "parallel" in t and "vectorized" in t and "te." not in t
    assert lowered["main"].name == "tir.func"
    verify(parse_module(t))


def test_elementwise_compute_inline_and_tir_max():
    n, m = 13, 21
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0 + 1, name="B")
    C = te.compute((n, m), lambda i, j: te.exp(B[i, j]) - tvm.tir.max(B[i, j], 0.5) + te.max(B[i, j], -1.0),
                   name="C")
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    f = s[C].fuse(*s[C].op.axis)
    fo, fi = s[C].split(f, factor=8)
    s[C].parallel(fo)
    s[C].vectorize(fi)
    assert "te.compute_inline %B" in str(s)
    mod = tvm.build(s, [A, C])
    a = tvm.nd.array(rand(n, m))
    c = tvm.nd.empty((n, m))
    mod(a, c)
    b = a.numpy() * 2 + 1
    np.testing.assert_allclose(c.numpy(), np.exp(b) - np.maximum(b, 0.5) + np.maximum(b, -1.0), rtol=1e-5, atol=1e-6)
    assert "B" not in [op.attributes.get("sym_name") for op in tvm.lower(s, [A, C]).module.body.ops]


def test_max_reduction_over_an_offset_axis():
    A = te.placeholder((9, 21), name="A")
    k = te.reduce_axis((2, 21), name="k")
    R = te.compute((9,), lambda i: te.max(A[i, k], axis=k), name="R")
    s = te.create_schedule(R.op)
    ko, ki = s[R].split(k, factor=4)
    s[R].unroll(ki)
    a = rand(9, 21)
    r = tvm.nd.empty((9,))
    tvm.build(s, [A, R])(tvm.nd.array(a), r)
    np.testing.assert_allclose(r.numpy(), a[:, 2:].max(1))


def test_min_with_where_and_two_axes():
    A = te.placeholder((6, 5, 4), name="A")
    k = te.reduce_axis((0, 5), name="k")
    l = te.reduce_axis((0, 4), name="l")   # noqa: E741
    R = te.compute((6,), lambda i: te.min(A[i, k, l], axis=[k, l], where=k + l < 6), name="R")
    s = te.create_schedule(R.op)
    a = rand(6, 5, 4)
    r = np.zeros(6, "float32")
    tvm.build(s, [A, R])(a, r)        # numpy arrays work too
    mask = (np.arange(5)[:, None] + np.arange(4)[None, :]) < 6
    np.testing.assert_allclose(r, np.where(mask, a, np.inf).reshape(6, -1).min(1))


def test_padding_reads_are_guarded():
    A = te.placeholder((7, 3), name="A")
    P = te.compute((9, 3), lambda i, j: te.if_then_else(te.all(i >= 1, i < 8), A[i - 1, j], 0.0), name="P")
    s = te.create_schedule(P.op)
    assert "if %" in str(s) and "else 0.0" in str(s)   # a guarded te.read
    a = rand(7, 3)
    p = tvm.nd.empty((9, 3))
    tvm.build(s, [A, P])(tvm.nd.array(a), p)
    np.testing.assert_allclose(p.numpy(), np.pad(a, ((1, 1), (0, 0))))


def test_integers_casts_and_division():
    A = te.placeholder((10,), dtype="int32", name="A")
    B = te.compute((10,), lambda i: (A[i] // 3 + i % 4 - A[i] % 3).astype("float32") / 2 + te.sqrt(
        (i * 1.0).astype("float32")), name="B")
    s = te.create_schedule(B.op)
    a = np.arange(-5, 5, dtype="int32")
    b = tvm.nd.empty((10,))
    tvm.build(s, [A, B])(tvm.nd.array(a), b)
    i = np.arange(10)
    want = (a // 3 + i % 4 - a % 3).astype("float32") / 2 + np.sqrt(i.astype("float32"))
    np.testing.assert_allclose(b.numpy(), want, rtol=1e-6)
    assert B.dtype == "float32" and A.dtype == "int32"


def test_pragma_and_storage_ops():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((8, 8), lambda i, j: B[i, j] * 3.0, name="C")
    s = te.create_schedule(C.op)
    s[B].storage_align(s[B].op.axis[0], 8, 1)
    s[B].double_buffer()
    s[B].set_scope("global")
    s[C].pragma(s[C].op.axis[0], "auto_unroll_max_step", 16)
    s[C].pragma(s[C].op.axis[1], "unroll_explicit")
    text = str(s)
    assert "te.storage_align %B {axis = 0, factor = 8, offset = 1}" in text
    assert "te.pragma %i {auto_unroll_max_step = 16}" in text and "te.double_buffer %B" in text
    assert "pragma_auto_unroll_max_step = 16" in str(tvm.lower(s, [A, C]))
    a = rand(8, 8)
    c = tvm.nd.empty((8, 8))
    tvm.build(s, [A, C])(tvm.nd.array(a), c)
    np.testing.assert_allclose(c.numpy(), (a + 1) * 3, rtol=1e-6)


def test_prefetch_a_row_ahead():
    """s[C].prefetch(A, i, 1): te.prefetch, a tir.prefetch per cache line of
    row i + 1 at the top of loop i (its last iteration points past A: a
    prefetch never faults); the numbers are numpy's."""
    A = te.placeholder((16, 64), name="A")
    k = te.reduce_axis((0, 64), name="k")
    C = te.compute((16,), lambda i: te.sum(A[i, k] * A[i, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    s[C].prefetch(A, s[C].op.axis[0], 1)
    assert "te.prefetch %A, %i {offset = 1}" in str(s)
    tir = str(tvm.lower(s, [A, C]))
    assert tir.count("tir.prefetch %A[") == 4   # 64 floats: four 64-byte lines
    a = rand(16, 64)
    c = tvm.nd.empty((16,))
    tvm.build(s, [A, C])(tvm.nd.array(a), c)
    np.testing.assert_allclose(c.numpy(), (a * a).sum(1), rtol=1e-5)
    with pytest.raises(tvm.TVMError, match="does not read"):
        B = te.placeholder((16,), name="B")
        s[C].prefetch(B, s[C].op.axis[0], 1)


def test_comm_reducer_becomes_a_te_reducer():
    A = te.placeholder((5, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    absmax = te.comm_reducer(lambda x, y: tvm.tir.max(x, te.abs(y)), lambda t: tvm.tir.const(0, t), name="absmax")
    R = te.compute((5,), lambda i: absmax(A[i, k], axis=k), name="R")
    s = te.create_schedule(R.op)
    text = str(s)
    assert "te.reducer @absmax(" in text and "reduce [%k: 8] @absmax" in text
    verify(parse_module(text))
    a = rand(5, 8)
    r = tvm.nd.empty((5,))
    tvm.build(s, [A, R])(tvm.nd.array(a), r)
    np.testing.assert_allclose(r.numpy(), np.abs(a).max(1))


def test_tensor_and_op_attributes():
    A, B, C = matmul()
    assert A.shape == (N, K) and A.dtype == "float32" and A.name == "A"
    assert [v.name for v in C.op.axis] == ["i", "j"] and [v.name for v in C.op.reduce_axis] == ["k"]
    assert C.op.input_tensors == [A, B] and C.op.reduce_axis[0].dom.extent == K
    s = te.create_schedule(C.op)
    assert s[C].op is C.op and s[C.op] is s[C]


def test_schedule_edited_after_printing_and_arg_order():
    A, B, C = matmul()
    s = te.create_schedule(C.op)
    first = str(s)
    y, x = s[C].op.axis
    s[C].split(y, factor=3)
    assert str(s) != first and "te.split %i {factor = 3}" in str(s)
    f = tvm.build(s, [A, C, B], name="mm")         # arguments in any order
    assert f.entry_name == "mm"
    a, b = rand(N, K), rand(K, M)
    c = np.zeros((N, M), "float32")
    f["mm"](tvm.nd.array(a), c, tvm.nd.array(b))
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    assert f.time_evaluator("mm", tvm.cpu(0), number=1)(a, c, b).mean > 0


def test_two_schedules_of_one_compute_are_independent():
    A, B, C = matmul()
    s1 = te.create_schedule(C.op)
    s2 = te.create_schedule(C.op)
    s1[C].split(s1[C].op.axis[0], factor=4)
    s2[C].split(s2[C].op.axis[0], factor=5)   # the same IterVar, another schedule
    assert "factor = 4" in str(s1) and "factor = 5" in str(s2)


def test_clear_errors():
    A, B, C = matmul()
    D = te.compute((N, M), lambda i, j: C[i, j] + 1, name="D")
    s = te.create_schedule(D.op)
    with pytest.raises(tvm.TVMError, match="axis 'i' belongs to stage 'D', not to 'C'"):
        s[C].split(s[D].op.axis[0], factor=2)
    y = s[D].op.axis[0]
    s[D].split(y, factor=2)
    with pytest.raises(tvm.TVMError, match="already split .stale handle"):
        s[D].split(y, factor=2)
    with pytest.raises(tvm.TVMError, match="tensorize is not supported"):
        s[D].tensorize(s[D].op.axis[1], None)
    with pytest.raises(tvm.TVMError, match="cannot vectorize reduce axis"):
        s[C].vectorize(s[C].op.reduce_axis[0])
    with pytest.raises(tvm.TVMError, match="exactly one of factor= or nparts="):
        s[C].split(s[C].op.axis[0])
    with pytest.raises(tvm.TVMError, match="placeholder: it has no stage"):
        s[A]
    with pytest.raises(tvm.TVMError, match="placeholder 'B' is used by the schedule but not in args"):
        tvm.lower(s, [A, D])
    with pytest.raises(tvm.TVMError, match="reduction .* must be the whole body"):
        k = te.reduce_axis((0, 3), name="k")
        te.compute((3,), lambda i: te.sum(A[i, k], axis=k) * 2)
    with pytest.raises(tvm.TVMError, match="create_group is not supported"):
        s.create_group([D], [A])


def test_dialect_diagnostic_points_at_the_python_line():
    A, B, C = matmul()
    E = te.compute((N,), lambda i: A[i, 0] * 2, name="E")
    D = te.compute((N, M), lambda i, j: C[i, j] + 1, name="D")
    s = te.create_schedule([D.op, E.op])
    s[C].compute_at(s[E], s[E].op.axis[0])   # E does not read C
    with pytest.raises(tvm.TVMError) as info:
        tvm.lower(s, [A, B, D, E])
    msg = str(info.value)
    assert "test_classic_te.py:" in msg and "does not read 'C'" in msg
    assert "s[C].compute_at(s[E], s[E].op.axis[0])" in msg


def test_cuda_source_without_a_gpu():
    A = te.placeholder((1000,), name="A")
    B = te.compute((1000,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    assert 'te.bind %i.outer {thread = "blockIdx.x"}' in str(s)
    m = tvm.build(s, [A, B], target="cuda", name="add_one")
    src = m.imported_modules[0].get_source()
    assert "__global__" in src and "add_one" in src and "blockIdx.x" in src
    assert m.get_source() == src


def test_nd_devices_and_targets():
    x = tvm.nd.array(np.arange(6, dtype="float32").reshape(2, 3), device=tvm.cpu(0))
    assert x.shape == (2, 3) and x.dtype == "float32" and x.device == tvm.device("cpu")
    np.testing.assert_array_equal(x.numpy(), np.arange(6).reshape(2, 3))
    assert tvm.target.Target.current() is None
    with tvm.target.Target("llvm") as t:
        assert tvm.target.Target.current() is t and t.kind.name == "llvm"
        with tvm.target.Target("cuda"):
            assert tvm.target.Target.current().kind.name == "cuda"
        assert tvm.target.Target.current() is t
    assert tvm.target.Target.current() is None
    with pytest.raises(ValueError, match="bad target"):
        tvm.target.Target("opencl")


def test_import_tvmd_stays_lazy():
    code = "import sys, tvmd; assert 'tvmd.classic' not in sys.modules; from tvmd import te; " \
           "assert 'tvmd.classic' in sys.modules and te.placeholder"
    subprocess.run([sys.executable, "-c", code], check=True)


# -- the seed's own code, as written -------------------------------------------------------


def seed_matmul(n, m, k):
    """The seed's TE matmul, letter for letter: the reduction is a Python
    generator over range(k), not a te.reduce_axis."""
    A = te.placeholder((n, k), name="A", dtype="float32")
    B = te.placeholder((k, m), name="B", dtype="float32")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, kk] * B[kk, j] for kk in range(k)), name="C")
    return A, B, C


def test_a_generator_reduction_is_a_reduce_axis():
    A, B, C = seed_matmul(N, M, K)
    assert [a.name for a in C.op.reduce_axis] == ["kk"]
    s = te.create_schedule(C.op)
    f = tvm.build(s, [A, B, C], "llvm")
    a, b = rand(N, K), rand(K, M)
    c = tvm.nd.array(np.zeros((N, M), "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5, atol=1e-5)


def test_generator_reductions_over_offset_ranges_and_other_reducers():
    A = te.placeholder((6, 10), name="A")
    S = te.compute((6,), lambda i: te.max(A[i, t] for t in range(3, 10)), name="S")
    f = tvm.build(te.create_schedule(S.op), [A, S], "llvm")
    a = rand(6, 10)
    s = tvm.nd.array(np.zeros(6, "float32"))
    f(tvm.nd.array(a), s)
    np.testing.assert_array_equal(s.numpy(), a[:, 3:].max(axis=1))


@pytest.mark.parametrize("body, message", [
    (lambda A: lambda i: te.sum(A[i, t] for t in [0, 1, 2]), "must iterate over range"),
    (lambda A: lambda i: te.sum(A[i, t] for t in range(0, 10, 2)), "step 1"),
    (lambda A: lambda i: te.sum(A[i, t] for t in range(0)), "non-empty"),
    (lambda A: lambda i: te.sum(A[i, t] * A[i, u] for t in range(10) for u in range(2)), "one 'for'"),
])
def test_generator_reductions_it_cannot_take_are_clear_errors(body, message):
    A = te.placeholder((6, 10), name="A")
    with pytest.raises(tvm.TVMError, match=message):
        te.compute((6,), body(A), name="S")


def test_the_seeds_gpu_matmul_runs_on_the_emulated_device_and_compiles():
    """The seed's CUDA example (16-row blocks, a thread per row): its CUDA C
    computes a @ b (the launcher with the tir interpreter as the device) and
    compiles for sm_90 where NVRTC or nvcc is present."""
    from tvmd.backend.cuda.compile import compile_cuda, have_compiler
    from tvmd.backend.cuda.emulator import emulate
    n, m, k = 64, 24, 40
    A, B, C = seed_matmul(n, m, k)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    i_outer, i_inner = s[C].split(i, factor=16)
    s[C].bind(i_outer, te.thread_axis("blockIdx.x"))
    s[C].bind(i_inner, te.thread_axis("threadIdx.x"))
    fadd = tvm.build(s, [A, B, C], "cuda", name="matmul")
    src = fadd.get_source()
    assert "grid=(4, 1, 1) block=(16, 1, 1)" in src
    m_tir = tvm.lower(s, [A, B, C], name="matmul").module.clone()
    from tvmd.classic.build import _run
    _run(m_tir, "lower-tir{target=cuda}")
    a, b = rand(n, k), rand(k, m)
    c = np.zeros((n, m), "float32")
    emulate(m_tir)["matmul"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    if have_compiler():
        assert b"matmul" in compile_cuda(src, "sm_90", "cubin")


def test_the_seeds_autotvm_template_as_written():
    """``@tvm.te.autotvm.template`` and ``te.autotvm.get_config()`` (the
    seed's spelling of tvm.autotvm): its space is AutoTVM's, and every
    config builds CUDA that compiles."""
    from tvmd.backend.cuda.compile import compile_cuda, have_compiler

    @tvm.te.autotvm.template("seed_matmul_test")
    def matmul_template(N, M, K):
        A = te.placeholder((N, K), name="A")
        B = te.placeholder((K, M), name="B")
        C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j] for k in range(K)), name="C")
        s = te.create_schedule(C.op)
        cfg = te.autotvm.get_config()
        cfg.define_knob("tile_n", [64, 128, 256])
        cfg.define_knob("tile_m", [64, 128, 256])
        cfg.define_knob("vectorize_width", [4, 8])
        n, m = C.op.axis
        n_outer, n_inner = s[C].split(n, cfg["tile_n"].val)
        m_outer, m_inner = s[C].split(m, cfg["tile_m"].val)
        s[C].vectorize(m_inner)
        s[C].bind(n_outer, te.thread_axis("blockIdx.x"))
        s[C].bind(m_outer, te.thread_axis("threadIdx.x"))
        return s, [A, B, C]

    task = tvm.autotvm.task.create("seed_matmul_test", args=(512, 512, 64), target="cuda")
    space = task.config_space
    assert len(space) == 18
    assert [k for k in space.space_map] == ["tile_n", "tile_m", "vectorize_width"]
    for idx in (0, 17):
        with tvm.autotvm.task.ApplyConfig(space.get(idx)), tvm.target.Target("cuda"):
            s, args = matmul_template(512, 512, 64)
        src = tvm.build(s, args, "cuda", name="matmul").get_source()
        tn, tm = [(64, 128, 256)[v] for v in (idx % 3, idx // 3 % 3)]
        assert f"grid=({512 // tn}, 1, 1) block=({512 // tm}, 1, 1)" in src
        if have_compiler():
            assert b"matmul" in compile_cuda(src, "sm_90", "cubin")
    from tvmd.autotvm.space import ConfigEntity
    with pytest.raises(ValueError, match="not a config of template 'seed_matmul_test'"):
        with tvm.autotvm.task.ApplyConfig(ConfigEntity(0, {"tile_n": 32})):
            matmul_template(512, 512, 64)
