module attributes {gpu.container_module = unit} {
  func.func @launch_control(%arg0: !fly.ptr<i32, global>, %arg1: i32, %arg2: !fly.ptr<i32, global>, %arg3: i32, %arg4: i64) attributes {llvm.emit_c_interface = unit} {
    %0 = arith.constant 1 : i32 loc("ir_stages.py":46:5)
    %1 = arith.constant 1 : i32 loc("ir_stages.py":46:5)
    %2 = arith.constant 1 : i32 loc("ir_stages.py":46:5)
    %3 = arith.constant 32 : i32 loc("ir_stages.py":46:5)
    %4 = arith.constant 1 : i32 loc("ir_stages.py":46:5)
    %5 = arith.constant 1 : i32 loc("ir_stages.py":46:5)
    %6 = arith.constant 0 : i32 loc("ir_stages.py":46:5)
    gpu.launch_func <%arg4 : i64> @kernels::@control_0 blocks in (%0, %1, %2) threads in (%3, %4, %5) : i32 dynamic_shared_memory_size %6 args(%arg0 : !fly.ptr<i32, global>, %arg1 : i32, %arg2 : !fly.ptr<i32, global>, %arg3 : i32) loc("ir_stages.py":46:5)
    func.return loc("ir_stages.py":44:1)
  } loc("ir_stages.py":44:1)
  gpu.module @kernels {
    gpu.func @control_0(%arg0: !fly.ptr<i32, global>, %arg1: i32, %arg2: !fly.ptr<i32, global>, %arg3: i32) attributes {kernel = true, known_block_size = array<i32: 32, 1, 1>} {
      %0 = "gpu.thread_id"() {dimension = "x"} : () -> (i32) loc("ir_stages.py":31:11)
      %1 = arith.constant 0 : i32 loc("ir_stages.py":33:5)
      %2 = arith.constant 0 : i32 loc("ir_stages.py":33:5)
      %3 = arith.constant 4 : i32 loc("ir_stages.py":33:5)
      %4 = arith.constant 1 : i32 loc("ir_stages.py":33:5)
      %5 = scf.for %arg4 = %2 to %3 step %4 iter_args(%arg5 = %1) -> (i32) : i32 {
        %6 = arith.addi %0, %arg4 : i32 loc("ir_stages.py":34:13)
        %7 = arith.constant 2 : i32 loc("ir_stages.py":34:12)
        %8 = arith.remsi %6, %7 : i32 loc("ir_stages.py":34:12)
        %9 = arith.constant 0 : i32 loc("ir_stages.py":34:12)
        %10 = arith.cmpi eq, %8, %9 : i32 loc("ir_stages.py":34:12)
        %11 = scf.if %10 -> (i32) {
          %12 = ptr.add %arg2, %arg4 : !fly.ptr<i32, global> loc("ir_stages.py":35:25)
          %13 = "ptr.load"(%12) {align = 4} : (!fly.ptr<i32, global>) -> (i32) loc("ir_stages.py":35:25)
          %14 = arith.addi %arg5, %13 : i32 loc("ir_stages.py":35:19)
          scf.yield %14 : i32 loc("ir_stages.py":34:9)
        } else {
          %15 = arith.constant 1 : i32 loc("ir_stages.py":37:19)
          %16 = arith.subi %arg5, %15 : i32 loc("ir_stages.py":37:19)
          scf.yield %16 : i32 loc("ir_stages.py":34:9)
        } loc("ir_stages.py":34:9)
        scf.yield %11 : i32 loc("ir_stages.py":33:5)
      } loc("ir_stages.py":33:5)
      %17 = arith.constant 0 : i32 loc("ir_stages.py":39:5)
      %18 = scf.while (%arg6 = %17) : (i32) -> (i32) {
        %19 = arith.muli %arg6, %arg6 : i32 loc("ir_stages.py":39:11)
        %20 = arith.cmpi slt, %19, %0 : i32 loc("ir_stages.py":39:11)
        scf.condition(%20) %arg6 : i32 loc("ir_stages.py":39:5)
      } do {
      ^bb0(%arg7: i32):
        %21 = arith.constant 1 : i32 loc("ir_stages.py":40:13)
        %22 = arith.addi %arg7, %21 : i32 loc("ir_stages.py":40:13)
        scf.yield %22 : i32 loc("ir_stages.py":39:5)
      } loc("ir_stages.py":39:5)
      %23 = arith.constant 3 : i32 loc("ir_stages.py":41:23)
      %24 = arith.cmpi sgt, %0, %23 : i32 loc("ir_stages.py":41:23)
      %25 = arith.constant 3 : i32 loc("ir_stages.py":41:35)
      %26 = arith.cmpi slt, %18, %25 : i32 loc("ir_stages.py":41:35)
      %27 = arith.andi %24, %26 : i1 loc("ir_stages.py":41:23)
      %28 = scf.if %27 -> (i32) {
        scf.yield %5 : i32 loc("ir_stages.py":41:16)
      } else {
        scf.yield %18 : i32 loc("ir_stages.py":41:16)
      } loc("ir_stages.py":41:16)
      %29 = ptr.add %arg0, %0 : !fly.ptr<i32, global> loc("ir_stages.py":41:5)
      "ptr.store"(%28, %29) {align = 4} : (i32, !fly.ptr<i32, global>) -> () loc("ir_stages.py":41:5)
      gpu.return loc("ir_stages.py":29:1)
    } loc("ir_stages.py":29:1)
  }
}