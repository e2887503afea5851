// RUN: flydsl-opt %s --pass fly-layout-lowering | filecheck %s

// The fly dialect's records go: get_scalar of a static leaf is a constant, of a run-time leaf the integer
// its constructor was built from; fly.print is gpu.printf with a newline; every other fly op is erased.
// CHECK-LABEL: gpu.func @lower
// CHECK-NOT: "fly.
// CHECK: %[[TEN:[0-9]+]] = arith.constant 10 : i32
// CHECK-NEXT: %[[SUM:[0-9]+]] = arith.addi %[[TEN]], %arg0 : i32
// CHECK-NEXT: gpu.printf "s=%d\n" %[[SUM]] : i32
// CHECK-NEXT: gpu.return
module {
  gpu.func @lower(%arg0: i32) attributes {kernel = true} {
    %0 = "fly.make_int_tuple"(%arg0) : (i32) -> (!fly.int_tuple<(16,?)>)
    %1 = "fly.static"() : () -> (!fly.int_tuple<(1,16)>)
    %2 = "fly.make_layout"(%0, %1) : (!fly.int_tuple<(16,?)>, !fly.int_tuple<(1,16)>) -> (!fly.layout<(16,?):(1,16)>)
    %3 = "fly.static"() : () -> (!fly.int_tuple<(10)>)
    %4 = "fly.get_scalar"(%3) : (!fly.int_tuple<(10)>) -> (i32)
    %5 = "fly.make_int_tuple"(%arg0) : (i32) -> (!fly.int_tuple<?>)
    %6 = "fly.get_scalar"(%5) : (!fly.int_tuple<?>) -> (i32)
    %7 = arith.addi %4, %6 : i32
    "fly.print"(%7) {format = "s={}"} : (i32) -> ()
    gpu.return
  }
}
