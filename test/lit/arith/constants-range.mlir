// RUN: tvm-opt %s | FileCheck %s
// The extremes of each range verify; a signless constant written in the
// unsigned range holds (and prints) its signed value.

// CHECK-LABEL: tir.func @f
tir.func @f(%A: memref<8xf32>) {
  // CHECK: arith.constant -1 : i8
  %a = arith.constant 255 : i8
  // CHECK: arith.constant -128 : i8
  %b = arith.constant -128 : i8
  // CHECK: arith.constant -1 : index
  %c = arith.constant 18446744073709551615 : index
  // CHECK: arith.constant 4294967295 : ui32
  %d = arith.constant 4294967295 : ui32
  // CHECK: arith.constant 3.4028234663852886e+38 : f32
  %e = arith.constant 3.4028234663852886e+38 : f32
  // CHECK: arith.constant inf : f32
  %f = arith.constant inf : f32
  // CHECK: arith.constant 65504.0 : f16
  %g = arith.constant 65504.0 : f16
}
