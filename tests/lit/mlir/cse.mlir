// RUN: flydsl-opt %s --pass cse | filecheck %s

// Identical pure ops merge; a value of an enclosing block is reused in a nested region, never the other
// way round; ops with side effects (loads) never merge.
// CHECK-LABEL: gpu.func @cse
// CHECK: %[[A:[0-9]+]] = arith.addi %arg0, %arg1 : i32
// CHECK-NOT: arith.addi %arg0, %arg1
// CHECK: scf.if
// CHECK-NEXT: %[[M:[0-9]+]] = arith.muli %[[A]], %[[A]] : i32
// CHECK-NEXT: scf.yield %[[M]] : i32
// CHECK: %{{[0-9]+}} = arith.muli %[[A]], %[[A]] : i32
// CHECK: "ptr.load"
// CHECK: "ptr.load"
module {
  gpu.func @cse(%arg0: i32, %arg1: i32, %arg2: i1, %arg3: !fly.ptr<i32, global>) attributes {kernel = true} {
    %0 = arith.addi %arg0, %arg1 : i32
    %1 = arith.addi %arg0, %arg1 : i32
    %2 = scf.if %arg2 -> (i32) {
      %3 = arith.addi %arg0, %arg1 : i32
      %4 = arith.muli %3, %1 : i32
      scf.yield %4 : i32
    } else {
      scf.yield %0 : i32
    }
    %5 = arith.muli %0, %1 : i32
    %6 = "ptr.load"(%arg3) : (!fly.ptr<i32, global>) -> (i32)
    %7 = "ptr.load"(%arg3) : (!fly.ptr<i32, global>) -> (i32)
    %8 = arith.addi %6, %7 : i32
    %9 = arith.addi %8, %5 : i32
    %10 = arith.addi %9, %2 : i32
    "ptr.store"(%10, %arg3) : (i32, !fly.ptr<i32, global>) -> ()
    gpu.return
  }
}
