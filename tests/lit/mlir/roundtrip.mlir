// RUN: flydsl-opt %s | filecheck %s

// Parsing and printing without passes keeps every op, in the custom syntax where an op has one (and
// comments are blanks).
// CHECK: module attributes {gpu.container_module = unit} {
// CHECK-NEXT: func.func @host(%arg0: i32, %arg1: i64) attributes {llvm.emit_c_interface = unit} {
// CHECK-NEXT: %[[T:[0-9]+]] = arith.constant 128 : i32
// CHECK-NEXT: %[[G:[0-9]+]] = arith.ceildivsi %arg0, %[[T]] : i32
// The launch reads in MLIR's generic form and prints in its custom one, with the kernel's module:
// CHECK: gpu.launch_func <%arg1 : i64> @kernels::@k blocks in (%[[G]], %{{[0-9]+}}, %{{[0-9]+}}) threads in ({{.*}}) : i32 dynamic_shared_memory_size %{{[0-9]+}}
// CHECK-NEXT: func.return
// CHECK: gpu.module @kernels {
// CHECK-NEXT: gpu.func @k() attributes {kernel = true, known_block_size = [128, 1, 1]} {
// CHECK-NEXT: %{{[0-9]+}} = "gpu.thread_id"() {dimension = "x"} : () -> (i32)
// CHECK-NEXT: %{{[0-9]+}} = arith.constant dense<[1, 2, 3, 4]> : vector<4xi32>
// CHECK-NEXT: gpu.return
module attributes {gpu.container_module = unit} {
  func.func @host(%arg0: i32, %arg1: i64) attributes {llvm.emit_c_interface = unit} {
    %0 = arith.constant 128 : i32  // threads per block
    %1 = arith.ceildivsi %arg0, %0 : i32
    %2 = arith.constant 1 : i32
    %3 = arith.constant 0 : i32
    "gpu.launch_func"(%1, %2, %2, %0, %2, %2, %3, %arg1) {kernel = @k} : (i32, i32, i32, i32, i32, i32, i32, i64) -> ()
    func.return
  }
  gpu.module @kernels {
    gpu.func @k() attributes {kernel = true, known_block_size = [128, 1, 1]} {
      %0 = "gpu.thread_id"() {dimension = "x"} : () -> (i32)
      %1 = arith.constant dense<[1, 2, 3, 4]> : vector<4xi32>
      gpu.return
    }
  }
}
