"""tir.alloc with run-time sizes: a local buffer whose size is a value
(a row of scores as long as the sequence), on the LLVM path (heap
storage, per thread in a parallel loop) and in the tir interpreter, both
against numpy."""

import numpy as np
import pytest

from tvmd.backend.llvm import jit
from tvmd.dialects.tir.interpreter import Program
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.parser import parse_module

# per row r (in parallel): T = 2 * A[r, :] in a buffer of n elements, then
# O[r, j] = T[n - 1 - j] + T[j]: every element of T read after all are written
SRC = '''
tir.func @mirror(%A: memref<?x?xf32>, %O: memref<?x?xf32>, %m: index, %n: index) attributes {num_outputs = 1} {
  tir.for %r = 0 to %m parallel {
    %T = tir.alloc(%n) : memref<?xf32>
    tir.for %j = 0 to %n {
      %a = tir.load %A[%r, %j] : f32
      %t = arith.addf %a, %a : f32
      tir.store %t, %T[%j] : f32
    }
    tir.for %j = 0 to %n {
      %c1 = arith.constant 1 : index
      %l = arith.subi %n, %c1 : index
      %k = arith.subi %l, %j : index
      %x = tir.load %T[%k] : f32
      %y = tir.load %T[%j] : f32
      %s = arith.addf %x, %y : f32
      tir.store %s, %O[%r, %j] : f32
    }
  }
}
'''


def _want(a):
    return 2 * a[:, ::-1] + 2 * a


@pytest.mark.parametrize("m, n", [(1, 1), (3, 7), (8, 300), (2, 20000)])
def test_run_time_sized_alloc_on_both_paths(m, n):
    a = np.random.default_rng(n).standard_normal((m, n)).astype(np.float32)
    lib = jit.compile(parse_module(SRC))
    o = np.full((m, n), np.nan, np.float32)
    lib.mirror(a, o, m, n)
    np.testing.assert_allclose(o, _want(a), rtol=1e-6)
    if m * n <= 3000:   # the interpreter is slow
        o2 = np.full((m, n), np.nan, np.float32)
        Program(parse_module(SRC).body.first)(a, o2, m, n)
        np.testing.assert_allclose(o2, _want(a), rtol=1e-6)


def test_round_trip_and_size_count():
    m = parse_module(SRC)
    assert "tir.alloc (%n) : memref<?xf32>" in str(m)
    assert str(parse_module(str(m))) == str(m)
    with pytest.raises(DiagnosticError, match="2 dynamic dimension"):
        parse_module(SRC.replace("tir.alloc(%n) : memref<?xf32>", "tir.alloc(%n) : memref<?x?xf32>"))
