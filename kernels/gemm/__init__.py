"""GEMM kernels: FlyDSL's preshuffle GEMM (fp8/int8/bf16/fp16 with per-token/per-channel scales)."""
