module attributes {gpu.container_module = unit} {
  func.func @launch_vadd(%arg0: !fly.ptr<f32, global>, %arg1: i32, %arg2: !fly.ptr<f32, global>, %arg3: i32, %arg4: !fly.ptr<f32, global>, %arg5: i32, %arg6: i32, %arg7: i64) attributes {llvm.emit_c_interface = unit} {
    %0 = arith.constant 127 : i32 loc("ir_stages.py":21:36)
    %1 = arith.addi %arg6, %0 : i32 loc("ir_stages.py":21:36)
    %2 = arith.constant 128 : i32 loc("ir_stages.py":21:35)
    %3 = arith.floordivsi %1, %2 : i32 loc("ir_stages.py":21:35)
    %4 = arith.constant 1 : i32 loc("ir_stages.py":21:5)
    %5 = arith.constant 0 : i32 loc("ir_stages.py":21:5)
    gpu.launch_func <%arg7 : i64> @kernels::@vadd_0 blocks in (%3, %4, %4) threads in (%2, %4, %4) : i32 dynamic_shared_memory_size %5 args(%arg0 : !fly.ptr<f32, global>, %arg1 : i32, %arg2 : !fly.ptr<f32, global>, %arg3 : i32, %arg4 : !fly.ptr<f32, global>, %arg5 : i32, %arg6 : i32) loc("ir_stages.py":21:5)
    func.return loc("ir_stages.py":19:1)
  } loc("ir_stages.py":19:1)
  gpu.module @kernels {
    gpu.func @vadd_0(%arg0: !fly.ptr<f32, global>, %arg1: i32, %arg2: !fly.ptr<f32, global>, %arg3: i32, %arg4: !fly.ptr<f32, global>, %arg5: i32, %arg6: i32) attributes {kernel = true, known_block_size = array<i32: 128, 1, 1>} {
      %0 = "gpu.block_id"() {dimension = "x"} : () -> (i32) loc("ir_stages.py":14:9)
      %1 = arith.constant 128 : i32 loc("ir_stages.py":14:9)
      %2 = arith.muli %0, %1 : i32 loc("ir_stages.py":14:9)
      %3 = "gpu.thread_id"() {dimension = "x"} : () -> (i32) loc("ir_stages.py":14:43)
      %4 = arith.addi %2, %3 : i32 loc("ir_stages.py":14:9)
      %5 = arith.cmpi slt, %4, %arg6 : i32 loc("ir_stages.py":15:8)
      scf.if %5 {
        %6 = ptr.add %arg0, %4 : !fly.ptr<f32, global> loc("ir_stages.py":16:16)
        %7 = "ptr.load"(%6) {align = 4} : (!fly.ptr<f32, global>) -> (f32) loc("ir_stages.py":16:16)
        %8 = ptr.add %arg2, %4 : !fly.ptr<f32, global> loc("ir_stages.py":16:23)
        %9 = "ptr.load"(%8) {align = 4} : (!fly.ptr<f32, global>) -> (f32) loc("ir_stages.py":16:23)
        %10 = arith.addf %7, %9 : f32 loc("ir_stages.py":16:16)
        %11 = ptr.add %arg4, %4 : !fly.ptr<f32, global> loc("ir_stages.py":16:9)
        "ptr.store"(%10, %11) {align = 4} : (f32, !fly.ptr<f32, global>) -> () loc("ir_stages.py":16:9)
        scf.yield loc("ir_stages.py":15:5)
      } loc("ir_stages.py":15:5)
      gpu.return loc("ir_stages.py":12:1)
    } loc("ir_stages.py":12:1)
  }
}