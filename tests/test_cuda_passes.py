"""tir-split-host-device and tir-thread-sync: the IR they make, and that it
computes the right numbers (tir interpreter, threads in lockstep)."""

import os

import numpy as np

from tvmd.dialects.tir.interpreter import run
from tvmd.dialects.tir.passes.split_host_device import SplitHostDevice, split_function
from tvmd.dialects.tir.passes.thread_sync import ThreadSync, sync_function
from tvmd.ir.pass_manager import PassManager
from tvmd.ir.printer import print_module
from tvmd.ir.verifier import verify
from tvmd.parser import parse_module
from tvmd.backend.cuda.emulator import emulate

LIT = os.path.join(os.path.dirname(__file__), "..", "test", "lit", "translate")


def lit_module(name):
    with open(os.path.join(LIT, name)) as f:
        return parse_module(f.read())


def barriers(f):
    return sum(1 for op in f.walk() if op.name == "tir.barrier")


def test_thread_sync_makes_the_shared_matmul_correct():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((32, 32)).astype("float32")
    B = rng.standard_normal((32, 32)).astype("float32")
    m = lit_module("cuda-thread-sync.tir")
    f = m.lookup("mm_shared")
    # without barriers a thread reads tile elements not yet stored (NaN-filled)
    C = np.zeros((32, 32), "float32")
    run(f, A, B, C)
    assert not np.allclose(C, A @ B, rtol=1e-4, atol=1e-4)
    PassManager([(None, ThreadSync())]).run(m)
    verify(m)
    assert barriers(f) == 2
    C = np.zeros((32, 32), "float32")
    run(f, A, B, C)
    np.testing.assert_allclose(C, A @ B, rtol=1e-4, atol=1e-4)


def test_thread_sync_is_idempotent_and_leaves_non_shared_code_alone():
    m = lit_module("cuda-thread-sync.tir")
    f = m.lookup("mm_shared")
    assert sync_function(f) == 2
    once = print_module(m)
    assert sync_function(f) == 0 and print_module(m) == once
    plain = parse_module("""
tir.func @copy(%A: memref<64xf32>, %B: memref<64xf32>) {
  tir.for %t = 0 to 64 thread("threadIdx.x") {
    %l = tir.alloc : memref<1xf32, "local">
    %c0 = arith.constant 0 : index
    %x = tir.load %A[%t] : f32
    tir.store %x, %l[%c0] : f32
    %y = tir.load %l[%c0] : f32
    tir.store %y, %B[%t] : f32
  }
}""")
    assert sync_function(plain.lookup("copy")) == 0


def test_thread_sync_write_after_read_in_a_loop():
    # each iteration stages one value per thread and reads a neighbour's: the
    # next iteration's store must wait for the slower threads' reads
    m = parse_module("""
tir.func @shift(%A: memref<4x16xf32>, %B: memref<4x16xf32>) {
  tir.for %b = 0 to 1 thread("blockIdx.x") {
    %S = tir.alloc : memref<16xf32, "shared">
    tir.for %t = 0 to 16 thread("threadIdx.x") {
      tir.for %r = 0 to 4 {
        %x = tir.load %A[%r, %t] : f32
        tir.store %x, %S[%t] : f32
        %c1 = arith.constant 1 : index
        %c16 = arith.constant 16 : index
        %n0 = arith.addi %t, %c1 : index
        %n = arith.floormodsi %n0, %c16 : index
        %y = tir.load %S[%n] : f32
        tir.store %y, %B[%r, %t] : f32
      }
    }
  }
}""")
    f = m.lookup("shift")
    assert sync_function(f) == 2
    loop = next(op for op in f.walk() if op.name == "tir.for" and op.kind == "serial")
    names = [op.name for op in loop.body.ops]
    assert names[-1] == "tir.barrier"                    # before the next iteration's overwrite
    assert names.index("tir.barrier") < names.index("tir.load", names.index("tir.store"))
    A = np.random.default_rng(1).standard_normal((4, 16)).astype("float32")
    B = np.zeros_like(A)
    run(f, A, B)
    np.testing.assert_array_equal(B, np.roll(A, -1, axis=1))


SPLIT = "cuda-split-host-device.tir"


def test_split_host_device_outlines_kernels_and_keeps_launches():
    m = lit_module(SPLIT)
    PassManager([(None, SplitHostDevice())]).run(m)
    verify(m)
    names = [op.sym_name for op in m.body.ops]
    assert names == ["softmax_kernel0", "softmax_kernel1", "softmax_kernel2", "softmax", "scale"]
    host = m.lookup("softmax")
    assert [op.name for op in host.body.ops] == ["tir.alloc", "tir.alloc"] + ["tir.launch"] * 3
    assert "kernel" not in host.attributes
    k2 = m.lookup("softmax_kernel2")
    assert "kernel" in k2.attributes and k2.attributes["num_outputs"] == 1   # stores to %R only
    assert "kernel" in m.lookup("scale").attributes
    # the text round-trips
    assert print_module(parse_module(print_module(m))) == print_module(m)


def test_split_program_computes_softmax():
    m = lit_module(SPLIT)
    A = np.random.default_rng(3).standard_normal((4, 10)).astype("float32")
    lib = emulate(m)
    R = np.empty_like(A)
    lib["softmax"](A, R)
    e = np.exp(A - A.max(1, keepdims=True))
    np.testing.assert_allclose(R, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    assert [k for k, _, _ in lib.launches] == ["softmax_kernel0", "softmax_kernel1", "softmax_kernel2"]


def test_split_leaves_cpu_functions_and_single_thread_nests():
    m = parse_module("""
tir.func @cpu(%A: memref<8xf32>, %B: memref<8xf32>) {
  tir.for %i = 0 to 8 parallel {
    %x = tir.load %A[%i] : f32
    tir.store %x, %B[%i] : f32
  }
}
tir.func @two_thread_loops(%A: memref<64xf32>) {
  tir.for %t = 0 to 64 thread("threadIdx.x") {
    %z = arith.constant 0.0 : f32
    tir.store %z, %A[%t] : f32
  }
  tir.for %t = 0 to 16 thread("threadIdx.x") {
    %o = arith.constant 1.0 : f32
    tir.store %o, %A[%t] : f32
  }
}""")
    assert split_function(m.lookup("cpu")) == 0 and "kernel" not in m.lookup("cpu").attributes
    # one block: the two nests stay in one kernel (no grid-wide sync needed)
    f = m.lookup("two_thread_loops")
    assert split_function(f) == 0 and "kernel" in f.attributes


def test_unbound_work_beside_kernels_runs_on_one_thread():
    m = parse_module("""
tir.func @mixed(%A: memref<8xf32>, %B: memref<8xf32>, %C: memref<8xf32>) attributes {num_outputs = 2} {
  %T = tir.alloc : memref<8xf32>
  tir.for %b = 0 to 2 thread("blockIdx.x") {
    tir.for %t = 0 to 4 thread("threadIdx.x") {
      %c4 = arith.constant 4 : index
      %o = arith.muli %b, %c4 : index
      %i = arith.addi %o, %t : index
      %x = tir.load %A[%i] : f32
      %y = arith.mulf %x, %x : f32
      tir.store %y, %T[%i] : f32
    }
  }
  tir.for %i = 0 to 8 {
    %c7 = arith.constant 7 : index
    %j = arith.subi %c7, %i : index
    %x = tir.load %T[%j] : f32
    tir.store %x, %B[%i] : f32
  }
  tir.for %i = 0 to 8 {
    %x = tir.load %B[%i] : f32
    tir.store %x, %C[%i] : f32
  }
}""")
    lib = emulate(m)
    A = np.arange(8, dtype="float32")
    B, C = np.zeros(8, "float32"), np.zeros(8, "float32")
    lib["mixed"](A, B, C)
    np.testing.assert_array_equal(B, (A * A)[::-1])
    np.testing.assert_array_equal(C, B)
    assert [g for _, g, _ in lib.launches] == [(2, 1, 1), (1, 1, 1), (1, 1, 1)]


def test_a_thread_updating_its_own_slot_needs_no_barrier():
    text = """
tir.func @partial(%A: memref<4x64xf32>, %R: memref<4xf32>) {
  tir.for %b = 0 to 4 thread("blockIdx.x") {
    %P = tir.alloc : memref<THREADSx32xf32, "shared">
    tir.for %y = 0 to THREADS thread("threadIdx.y") {
      tir.for %t = 0 to 32 thread("threadIdx.x") {
        %z = arith.constant 0.0 : f32
        tir.store %z, %P[SLOT, %t] : f32
        tir.for %k = 0 to 2 {
          %c32 = arith.constant 32 : index
          %o = arith.muli %k, %c32 : index
          %g = arith.addi %o, %t : index
          %x = tir.load %A[%b, %g] : f32
          %p = tir.load %P[SLOT, %t] : f32
          %s = arith.addf %p, %x : f32
          tir.store %s, %P[SLOT, %t] : f32
        }
      }
    }
  }
}"""
    # each (y, t) thread owns P[y, t]: no barrier at all
    own = parse_module(text.replace("THREADS", "2").replace("SLOT", "%y"))
    assert sync_function(own.lookup("partial")) == 0
    # P[0, t] is shared by the threads that differ only in y: barriers
    shared = parse_module(text.replace("THREADS", "2").replace("SLOT", "%c0").replace(
        "%z = arith.constant 0.0 : f32", "%z = arith.constant 0.0 : f32\n        %c0 = arith.constant 0 : index"))
    assert sync_function(shared.lookup("partial")) > 0
