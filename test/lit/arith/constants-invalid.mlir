// RUN: tvm-opt %s --split-input-file --verify-diagnostics
// Integer constants are range-checked against their type: signless iN takes
// -2^(N-1) .. 2^N-1 (MLIR's rule; the value held is the signed one), uiN
// 0 .. 2^N-1, index as i64.  Floats must stay finite in their type.

tir.func @f(%A: memref<8xf32>) {
  // expected-error@+1 {{integer constant 4294967297 does not fit i32}}
  %a = arith.constant 4294967297 : i32
}

// -----

tir.func @f(%A: memref<8xf32>) {
  // expected-error@+1 {{integer constant 300 does not fit i8 (range -128 .. 255}}
  %a = arith.constant 300 : i8
}

// -----

tir.func @f(%A: memref<8xf32>) {
  // expected-error@+1 {{integer constant -129 does not fit i8}}
  %a = arith.constant -129 : i8
}

// -----

tir.func @f(%A: memref<8xf32>) {
  // expected-error@+1 {{integer constant 18446744073709551616 does not fit index}}
  %a = arith.constant 18446744073709551616 : index
}

// -----

tir.func @f(%A: memref<8xf32>) {
  // expected-error@+1 {{integer constant -1 does not fit ui8 (range 0 .. 255)}}
  %a = arith.constant -1 : ui8
}

// -----

tir.func @f(%A: memref<8xf32>) {
  // expected-error@+1 {{integer constant 2 does not fit i1}}
  %a = arith.constant 2 : i1
}

// -----

tir.func @f(%A: memref<8xf32>) {
  // expected-error@+1 {{integer constant 255 does not fit i8 (range -128 .. 127, the signed range}}
  %a = "arith.constant"() {value = 255} : () -> i8
}

// -----

tir.func @f(%A: memref<8xf32>) {
  // expected-error@+1 {{float constant 1e+308 overflows f32}}
  %a = arith.constant 1e308 : f32
}

// -----

tir.func @f(%A: memref<8xf32>) {
  // expected-error@+1 {{float constant 70000.0 overflows f16}}
  %a = arith.constant 70000.0 : f16
}

// -----

tir.func @f(%A: memref<8xf32>) {
  // expected-error@+1 {{float literal 1e400 overflows f64}}
  %a = arith.constant 1e400 : f64
}

// -----

tir.func @f(%A: memref<8xf32>) {
  // expected-error@+1 {{constants of type i3 are not supported}}
  %a = arith.constant 1 : i3
}

// -----

tir.func @f(%A: memref<8xf32>) {
  // expected-error@+1 {{constant of unsupported type none}}
  %a = "arith.constant"() {value = 1} : () -> none
}
