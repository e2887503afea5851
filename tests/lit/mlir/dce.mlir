// RUN: flydsl-opt %s --pass dce | filecheck %s

// Unused pure ops go, and control flow whose regions only hold pure ops; stores and loops with stores stay.
// CHECK-LABEL: gpu.func @dce
// CHECK-NOT: arith.muli
// CHECK-NOT: scf.if
// CHECK: %[[ONE:[0-9]+]] = arith.constant 1 : i32
// CHECK-NEXT: %[[FOUR:[0-9]+]] = arith.constant 4 : i32
// CHECK-NEXT: scf.for %arg3 = %[[ONE]] to %[[FOUR]] step %[[ONE]]
// CHECK-NEXT: "ptr.store"(%arg3, %arg2)
// CHECK: gpu.return
module {
  gpu.func @dce(%arg0: i32, %arg1: i1, %arg2: !fly.ptr<i32, global>) attributes {kernel = true} {
    %0 = arith.muli %arg0, %arg0 : i32
    %1 = scf.if %arg1 -> (i32) {
      %2 = arith.muli %0, %0 : i32
      scf.yield %2 : i32
    } else {
      scf.yield %arg0 : i32
    }
    %3 = arith.constant 1 : i32
    %4 = arith.constant 4 : i32
    scf.for %arg3 = %3 to %4 step %3 : i32 {
      "ptr.store"(%arg3, %arg2) : (i32, !fly.ptr<i32, global>) -> ()
      scf.yield
    }
    gpu.return
  }
}
