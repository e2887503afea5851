module attributes {gpu.container_module = unit} {
  func.func @launch_control(%arg0: !fly.ptr<i32, global>, %arg1: i32, %arg2: !fly.ptr<i32, global>, %arg3: i32, %arg4: i64) attributes {llvm.emit_c_interface = unit} {
    %0 = arith.constant 1 : i32 loc("ir_stages.py":46:5)
    %1 = arith.constant 32 : i32 loc("ir_stages.py":46:5)
    %2 = arith.constant 0 : i32 loc("ir_stages.py":46:5)
    gpu.launch_func <%arg4 : i64> @kernels::@control_0 blocks in (%0, %0, %0) threads in (%1, %0, %0) : i32 dynamic_shared_memory_size %2 args(%arg0 : !fly.ptr<i32, global>, %arg1 : i32, %arg2 : !fly.ptr<i32, global>, %arg3 : i32) loc("ir_stages.py":46:5)
    func.return loc("ir_stages.py":44:1)
  } loc("ir_stages.py":44:1)
  gpu.module @kernels {
    gpu.func @control_0(%arg0: !fly.ptr<i32, global>, %arg1: i32, %arg2: !fly.ptr<i32, global>, %arg3: i32) attributes {kernel = true, known_block_size = array<i32: 32, 1, 1>} {
      %0 = "gpu.thread_id"() {dimension = "x"} : () -> (i32) loc("ir_stages.py":31:11)
      %1 = arith.constant 0 : i32 loc("ir_stages.py":33:5)
      %2 = arith.constant 4 : i32 loc("ir_stages.py":33:5)
      %3 = arith.constant 1 : i32 loc("ir_stages.py":33:5)
      %4 = scf.for %arg4 = %1 to %2 step %3 iter_args(%arg5 = %1) -> (i32) : i32 {
        %5 = arith.addi %0, %arg4 : i32 loc("ir_stages.py":34:13)
        %6 = arith.constant 2 : i32 loc("ir_stages.py":34:12)
        %7 = arith.remsi %5, %6 : i32 loc("ir_stages.py":34:12)
        %8 = arith.cmpi eq, %7, %1 : i32 loc("ir_stages.py":34:12)
        %9 = scf.if %8 -> (i32) {
          %10 = ptr.add %arg2, %arg4 : !fly.ptr<i32, global> loc("ir_stages.py":35:25)
          %11 = "ptr.load"(%10) {align = 4} : (!fly.ptr<i32, global>) -> (i32) loc("ir_stages.py":35:25)
          %12 = arith.addi %arg5, %11 : i32 loc("ir_stages.py":35:19)
          scf.yield %12 : i32 loc("ir_stages.py":34:9)
        } else {
          %13 = arith.subi %arg5, %3 : i32 loc("ir_stages.py":37:19)
          scf.yield %13 : i32 loc("ir_stages.py":34:9)
        } loc("ir_stages.py":34:9)
        scf.yield %9 : i32 loc("ir_stages.py":33:5)
      } loc("ir_stages.py":33:5)
      %14 = scf.while (%arg6 = %1) : (i32) -> (i32) {
        %15 = arith.muli %arg6, %arg6 : i32 loc("ir_stages.py":39:11)
        %16 = arith.cmpi slt, %15, %0 : i32 loc("ir_stages.py":39:11)
        scf.condition(%16) %arg6 : i32 loc("ir_stages.py":39:5)
      } do {
      ^bb0(%arg7: i32):
        %17 = arith.addi %arg7, %3 : i32 loc("ir_stages.py":40:13)
        scf.yield %17 : i32 loc("ir_stages.py":39:5)
      } loc("ir_stages.py":39:5)
      %18 = arith.constant 3 : i32 loc("ir_stages.py":41:23)
      %19 = arith.cmpi sgt, %0, %18 : i32 loc("ir_stages.py":41:23)
      %20 = arith.cmpi slt, %14, %18 : i32 loc("ir_stages.py":41:35)
      %21 = arith.andi %19, %20 : i1 loc("ir_stages.py":41:23)
      %22 = scf.if %21 -> (i32) {
        scf.yield %4 : i32 loc("ir_stages.py":41:16)
      } else {
        scf.yield %14 : i32 loc("ir_stages.py":41:16)
      } loc("ir_stages.py":41:16)
      %23 = ptr.add %arg0, %0 : !fly.ptr<i32, global> loc("ir_stages.py":41:5)
      "ptr.store"(%22, %23) {align = 4} : (i32, !fly.ptr<i32, global>) -> () loc("ir_stages.py":41:5)
      gpu.return loc("ir_stages.py":29:1)
    } loc("ir_stages.py":29:1)
  }
}