// RUN: tvm-opt %s --split-input-file --verify-diagnostics

tir.func @f(%A: memref<8xf32>) {
  %a = arith.constant 1 : index
  %b = arith.constant 1.0 : f32
  // expected-error@+1 {{use of value '%b' expects different type than prior uses: 'index' vs 'f32'}}
  %c = "arith.addi"(%a, %b) : (index, index) -> index
}

// -----

tir.func @f(%A: memref<8xf32>) {
  %b = arith.constant 1.0 : f32
  // expected-error@+1 {{expects integer or index operands, got f32}}
  %c = arith.addi %b, %b : f32
}

// -----

tir.func @f(%A: memref<8xf32>) {
  %a = arith.constant 1 : index
  // expected-error@+1 {{unknown predicate 'lt'}}
  %c = arith.cmpi lt, %a, %a : index
}

// -----

tir.func @f(%A: memref<8xf32>) {
  %b = arith.constant 1.0 : f32
  // expected-error@+1 {{cannot cast f32 to f64}}
  %c = arith.truncf %b : f32 to f64
}

// -----

tir.func @f(%A: memref<8xf32>) {
  %b = arith.constant 1.0 : f32
  // expected-error@+1 {{cannot cast f32 to i16}}
  %c = arith.bitcast %b : f32 to i16
}

// -----

tir.func @f(%A: memref<8xf32>) {
  // expected-error@+1 {{value 1 is not a float for type f32}}
  %b = "arith.constant"() {value = 1} : () -> f32
}
