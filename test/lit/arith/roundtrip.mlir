// arith ops print in their custom form and read back from it and from the generic form.
// RUN: tvm-opt %s | FileCheck %s
// RUN: tvm-opt %s --print-generic | tvm-opt - | FileCheck %s

// CHECK-LABEL: tir.func @scalar(
tir.func @scalar(%A: memref<8xf32>, %n: index, %B: memref<8xi32>) {
  tir.for %i = 0 to 8 {
    // CHECK: %c = arith.constant 2 : index
    %c = arith.constant 2 : index
    // CHECK-NEXT: %q = arith.floordivsi %i, %c : index
    %q = arith.floordivsi %i, %c : index
    // CHECK-NEXT: %r = arith.floormodsi %i, %c : index
    %r = arith.floormodsi %i, %c : index
    // CHECK-NEXT: %lt = arith.cmpi slt, %q, %n : index
    %lt = arith.cmpi slt, %q, %n : index
    %v = tir.load %A[%i] : f32
    // CHECK: %h = arith.constant 0.5 : f32
    %h = arith.constant 0.5 : f32
    %m = arith.mulf %v, %h : f32
    %ng = arith.negf %m : f32
    // CHECK: %o = arith.cmpf olt, %m, %ng : f32
    %o = arith.cmpf olt, %m, %ng : f32
    // CHECK-NEXT: %s = arith.select %o, %m, %ng : f32
    %s = arith.select %o, %m, %ng : f32
    // CHECK-NEXT: %k = arith.fptosi %s : f32 to i32
    %k = arith.fptosi %s : f32 to i32
    // CHECK-NEXT: %kb = arith.bitcast %s : f32 to i32
    %kb = arith.bitcast %s : f32 to i32
    %qi = arith.index_cast %q : index to i32
    %sum = arith.addi %k, %qi : i32
    tir.store %sum, %B[%i] : i32
  }
}
