// RUN: flydsl-opt %s --pass canonicalize --split-input-file | filecheck %s

// Constants fold through each op's own semantics; identities need no constants.
// CHECK-LABEL: gpu.func @folds
// CHECK: %[[C5:[0-9]+]] = arith.constant 5 : i32
// CHECK: %{{[0-9]+}} = arith.constant -1 : i32
// CHECK-NOT: arith.addi
// CHECK-NOT: arith.remsi
// CHECK-NOT: arith.muli
// CHECK: "ptr.store"(%arg0, %arg1)
// CHECK-NEXT: "ptr.store"(%[[C5]], %arg1)
// CHECK-NEXT: gpu.return
module {
  gpu.func @folds(%arg0: i32, %arg1: !fly.ptr<i32, global>) attributes {kernel = true} {
    %0 = arith.constant 2 : i32
    %1 = arith.constant 3 : i32
    %2 = arith.addi %0, %1 : i32
    %3 = arith.constant -7 : i32
    %4 = arith.remsi %3, %0 : i32
    %5 = arith.constant 0 : i32
    %6 = arith.addi %arg0, %5 : i32
    %7 = arith.constant 1 : i32
    %8 = arith.muli %6, %7 : i32
    "ptr.store"(%8, %arg1) : (i32, !fly.ptr<i32, global>) -> ()
    "ptr.store"(%2, %arg1) : (i32, !fly.ptr<i32, global>) -> ()
    gpu.return
  }
}

// -----

// A shift by the width or more is 0 (shli, shrui) or the sign (shrsi), as on the GPU.
// CHECK-LABEL: gpu.func @shifts
// CHECK: arith.constant 0 : i32
// CHECK: arith.constant -1 : i32
// CHECK-NOT: arith.sh
// CHECK: gpu.return
module {
  gpu.func @shifts(%arg0: !fly.ptr<i32, global>) attributes {kernel = true} {
    %0 = arith.constant 1 : i32
    %1 = arith.constant 40 : i32
    %2 = arith.shli %0, %1 : i32
    %3 = arith.constant -8 : i32
    %4 = arith.shrsi %3, %1 : i32
    "ptr.store"(%2, %arg0) : (i32, !fly.ptr<i32, global>) -> ()
    "ptr.store"(%4, %arg0) : (i32, !fly.ptr<i32, global>) -> ()
    gpu.return
  }
}

// -----

// scf.if on a constant is replaced by the chosen region; a loop that never runs by its inits.
// CHECK-LABEL: gpu.func @control
// CHECK-NOT: scf.if
// CHECK-NOT: scf.for
// CHECK: %[[T:[0-9]+]] = arith.addi %arg0, %arg0 : i32
// CHECK-NEXT: "ptr.store"(%[[T]], %arg1)
// CHECK: "ptr.store"(%arg0, %arg1)
module {
  gpu.func @control(%arg0: i32, %arg1: !fly.ptr<i32, global>) attributes {kernel = true} {
    %0 = arith.constant true : i1
    %1 = scf.if %0 -> (i32) {
      %2 = arith.addi %arg0, %arg0 : i32
      scf.yield %2 : i32
    } else {
      scf.yield %arg0 : i32
    }
    "ptr.store"(%1, %arg1) : (i32, !fly.ptr<i32, global>) -> ()
    %3 = arith.constant 4 : i32
    %4 = arith.constant 1 : i32
    %5 = scf.for %arg2 = %3 to %3 step %4 iter_args(%arg3 = %arg0) -> (i32) : i32 {
      %6 = arith.muli %arg3, %arg3 : i32
      scf.yield %6 : i32
    }
    "ptr.store"(%5, %arg1) : (i32, !fly.ptr<i32, global>) -> ()
    gpu.return
  }
}
