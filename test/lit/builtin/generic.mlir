// Every op reads and prints in the generic form; unknown ops need a flag.
// RUN: tvm-opt %s --allow-unregistered-dialect | FileCheck %s
// RUN: tvm-opt %s --allow-unregistered-dialect --print-generic | tvm-opt - --allow-unregistered-dialect | FileCheck %s
// RUN: not tvm-opt %s 2>&1 | FileCheck %s --check-prefix=UNREG

// UNREG: generic.mlir:[[# @LINE + 7]]:12: error: unregistered operation 'test.pair' (use --allow-unregistered-dialect to keep it)

// CHECK: module @m attributes {version = 2} {
// CHECK-NEXT:   %a, %b = "test.pair"() {k = [1, 2.5, "s", true, unit, @sym, f32, #tune.knob<"t", [1, 2]>]} : () -> (i32, f32)
// CHECK-NEXT:   relay.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:     %0 = nn.relu(%x) : tensor<4xf32>
module @m attributes {version = 2} {
  %a, %b = "test.pair"() {k = [1, 2.5, "s", true, unit, @sym, f32, #tune.knob<"t", [1, 2]>]} : () -> (i32, f32)
  "relay.func"() ({
  ^bb0(%x: tensor<4xf32>):
    %0 = "relay.nn.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    "relay.return"(%0) : (tensor<4xf32>) -> ()
  }) {sym_name = "f", function_type = (tensor<4xf32>) -> tensor<4xf32>} : () -> ()
}
