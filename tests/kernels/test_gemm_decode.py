"""The decode knobs of the preshuffle GEMM: the mma path's 8-row tile, programmatic dependent launch (``pdl=True``: the first share of the
weight is read before ``griddepcontrol.wait``, A, the scales, C and the split-K workspace after it) on the mma
and stream paths, and ``min_blocks`` (``.minnctapersm``: ptxas keeps more loads in flight; the stream path's
ring sized for that many blocks per SM).

On the CPU interpreter (where a launch runs after the previous one has ended, so a grid dependency is
always met): the same results as without the knobs, rows past M untouched.
Offline (ptxas): the PTX holds what each knob promises, and no local memory. Marked ``gpu``: CUDA graphs of
PDL launches that depend on the kernel before them give both references.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from kernels.gemm.gemm_fit import stream_pdl_min_blocks
from kernels.gemm.harness import run_gemm
from kernels.gemm.preshuffle_gemm import compile_preshuffle_gemm
from kernels.gemm.reference import numpy_dtype

CASES = [  # (in_dtype, M, N, K, compile keywords)
    ("fp8", 3, 256, 512, dict(path="mma", pdl=True, min_blocks=2)),
    ("int8", 17, 128, 1024, dict(tile_m=32, tile_n=128, tile_k=512, warps=(1, 4, 2), pdl=True)),  # 2 panels
    ("bf16", 5, 128, 256, dict(tile_m=16, tile_n=16, tile_k=128, pdl=True)),
    ("fp8", 21, 128, 1024, dict(path="stream", tile_m=8, tile_n=64, tile_k=128, max_blocks=10, pdl=True)),  # split
    ("fp8", 9, 128, 512, dict(path="stream", tile_m=16, tile_n=32, tile_k=256, max_blocks=5, pdl=True)),
    ("int8", 40, 256, 1024, dict(path="stream", tile_m=16, tile_n=128, tile_k=256, max_blocks=5, pdl=True)),
    ("fp8", 21, 128, 1024, dict(path="stream", tile_m=8, tile_n=64, tile_k=128, max_blocks=10, min_blocks=2)),
    # the mma path's 8-row tile (the m16 tile's rows 8-15 zeros: no A loads or widening for them)
    ("fp8", 1, 128, 512, dict(path="mma", tile_m=8, tile_n=32, tile_k=256)),
    ("fp8", 13, 128, 512, dict(path="mma", tile_m=8, tile_n=16, tile_k=512, pdl=True)),  # two row tiles
    ("int8", 8, 256, 1024, dict(path="mma", tile_m=8, tile_n=64, tile_k=512, warps=(1, 4, 2))),
    ("bf16", 5, 64, 256, dict(path="mma", tile_m=8, tile_n=8, tile_k=128)),
    # PDL with B only prefetched into L2 before the wait: the block's rows of each K atom, or whole panels
    ("fp8", 3, 256, 512, dict(path="mma", tile_m=16, tile_n=32, tile_k=256, pdl="prefetch")),
    ("int8", 17, 256, 1024, dict(tile_m=32, tile_n=128, tile_k=512, warps=(1, 4, 2), pdl="prefetch")),
    # the weight's loads with a cache hint (L2 only / evict first)
    ("fp8", 3, 256, 512, dict(path="mma", b_cache="cg")),
    ("bf16", 9, 128, 512, dict(path="mma", b_cache="cs", pdl=True)),
]


@pytest.mark.parametrize("in_dtype,M,N,K,kw", CASES, ids=[f"{c[0]}-M{c[1]}-{c[4].get('path', 'mma')}" for c in CASES])
def test_pdl_and_min_blocks_interpreter(in_dtype, M, N, K, kw, interpreter):
    res = run_gemm(in_dtype, M, N, K, cuda=False, seed=M, **kw)
    assert res.guard_ok and res.ok and res.rel_err < 2**-7, res
    assert ("PDL" in res.config) == bool(kw.get("pdl", False)), res.config
    assert ("L2 prefetch" in res.config) == (kw.get("pdl") == "prefetch"), res.config
    auto_m2 = False  # pdl=True on the stream path: two blocks per SM when the halved ring holds enough
    if kw.get("pdl") is True and kw.get("path") == "stream" and "min_blocks" not in kw:
        plain = {k: v for k, v in kw.items() if k != "pdl"}
        auto_m2 = stream_pdl_min_blocks(compile_preshuffle_gemm(N=N, K=K, in_dtype=in_dtype, **plain).gemm_config) > 1
    assert ("blocks/SM" in res.config) == ("min_blocks" in kw or auto_m2), res.config


def test_knobs_are_rejected_where_they_do_not_apply():
    with pytest.raises(ValueError, match="mma and stream"):
        compile_preshuffle_gemm(N=256, K=256, tile_m=64, tile_n=64, tile_k=128, pdl=True)
    with pytest.raises(ValueError, match="min_blocks"):
        compile_preshuffle_gemm(N=256, K=256, path="wgmma", min_blocks=2)
    with pytest.raises(ValueError, match="do not fit"):
        compile_preshuffle_gemm(N=256, K=256, path="stream", tile_m=256, min_blocks=8)
    with pytest.raises(ValueError, match="min_blocks"):
        compile_preshuffle_gemm(N=256, K=256, path="mma", min_blocks=0)
    with pytest.raises(ValueError, match="mma path"):
        compile_preshuffle_gemm(N=256, K=256, path="stream", pdl="prefetch")
    with pytest.raises(ValueError, match="pdl must be"):
        compile_preshuffle_gemm(N=256, K=256, path="mma", pdl="early")
    with pytest.raises(ValueError, match="b_cache"):
        compile_preshuffle_gemm(N=256, K=256, path="stream", b_cache="cg")
    with pytest.raises(ValueError, match="b_cache"):
        compile_preshuffle_gemm(N=256, K=256, path="mma", b_cache="lu")


@pytest.mark.parametrize("kw,want", [
    (dict(path="mma", pdl=True, min_blocks=2), [".minnctapersm 2", "griddepcontrol.launch_dependents",
                                                 "griddepcontrol.wait"]),
    (dict(path="stream", pdl=True), ["griddepcontrol.launch_dependents", "griddepcontrol.wait"]),
    (dict(path="mma", pdl="prefetch"), ["cp.async.bulk.prefetch.L2", "griddepcontrol.wait"]),
    (dict(path="mma", tile_m=16, tile_n=32, tile_k=1024, b_smem=4), ["cp.async.bulk.shared::cluster.global",
                                                                    "mbarrier.try_wait"]),
    (dict(path="stream", pdl=True, min_blocks=2), [".minnctapersm 2", "griddepcontrol.wait"]),
    (dict(path="mma"), []),
    (dict(path="stream", tile_n=64, streamk="early"), ["atom.global.or.b32", "atom.global.exch.b32", "fence.sc.gpu"]),
    (dict(path="stream", tile_n=64, cluster_k=2), [".reqnctapercluster 2, 1, 1", "barrier.cluster.arrive.relaxed",
                                                   "barrier.cluster.wait", "mapa",
                                                   "st.async.shared::cluster.mbarrier::complete_tx::bytes"]),
])  # fmt: skip
def test_ptx_of_the_knobs(kw, want, tmp_path, monkeypatch):
    for k, v in {"COMPILE_ONLY": "1", "FLYDSL_DUMP_IR": "1", "FLYDSL_DUMP_DIR": str(tmp_path),
                 "FLYDSL_RUNTIME_ENABLE_CACHE": "0"}.items():  # fmt: skip
        monkeypatch.setenv(k, v)
    N = K = 4096
    fn = compile_preshuffle_gemm(N=N, K=K, in_dtype="fp8", M=16, **kw)
    c = np.zeros((16, N), numpy_dtype("bf16"))
    z = np.zeros(N, np.float32)
    fn(c, np.zeros((16, K), np.int8), np.zeros((N, K), np.int8), z[:16], z, c[0, :0], 16, N)
    ptx_path = next(tmp_path.glob("kernel_gemm_0/*final_isa.ptx"))
    ptx = ptx_path.read_text()
    for s in want:
        assert s in ptx, s
    if not want or "pdl" not in kw:
        # (the stream path's one block per SM, for setmaxnreg, is .minnctapersm 1)
        assert "griddepcontrol" not in ptx and (".minnctapersm 2" not in ptx or "min_blocks" in kw)
    ptxas = shutil.which("ptxas")
    if ptxas:
        out = subprocess.run([ptxas, "-arch=sm_90a", "-v", str(ptx_path), "-o", str(tmp_path / "k.cubin")],
                             capture_output=True, text=True)  # fmt: skip
        assert out.returncode == 0 and "0 bytes spill stores" in out.stdout + out.stderr, out.stderr
        assert "C7515" not in out.stdout + out.stderr, out.stderr  # wgmmas not serialized by ptxas


@pytest.mark.gpu
@pytest.mark.parametrize("N,K,M,variant", [(4096, 4096, 16, "_x_x_@mma/m2/pdl"), (10240, 8192, 16, "auto/pdl"),
                                           (4096, 4096, 32, "auto/pdl")])  # fmt: skip
def test_pdl_launches_wait_for_the_kernel_before_them_gpu(N, K, M, variant):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from benchmarks.gemm_decode_round import pdl_chain_check

    line = pdl_chain_check(N, K, M, variant)
    assert "WRONG" not in line and "ERROR" not in line, line


@pytest.mark.parametrize("pdl", [False, True])
@pytest.mark.parametrize("probe", [None, "b", "mma", "a", "red", "late"])
def test_ladder_probes_interpreter(probe, pdl, interpreter):
    """The ladder's probe kernels (benchmarks/decode_ladder.py) run; the GEMM ones (``None``: the epilogue's
    operands loaded before the K loop, ``"late"``: after the reduction) compute it, the others write nothing."""
    from kernels.gemm.gemm_fit import with_min_blocks
    from kernels.gemm.gemm_mma_sync import build_mma_sync_gemm

    cfg = compile_preshuffle_gemm(N=128, K=1024, in_dtype="fp8", M=3, path="mma", pdl=pdl).gemm_config
    fn = build_mma_sync_gemm(with_min_blocks(cfg, 2), probe)
    res = run_gemm("fp8", 3, 128, 1024, launch_fn=fn, cuda=False, log=lambda *a, **k: None)
    assert res.guard_ok, res
    assert res.ok == (probe in (None, "late")), res
    with pytest.raises(ValueError, match="probe"):
        build_mma_sync_gemm(cfg, "epilogue")


@pytest.mark.parametrize("M", [3, 21])
def test_stream_late_operands_probe_interpreter(M, interpreter):
    """The stream path's epilogue operands loaded after the main loop (``probe="late"``, the layout before
    they moved before it) give the same result, whole and split tiles."""
    from kernels.gemm.gemm_stream import build_stream_gemm

    cfg = compile_preshuffle_gemm(N=128, K=1024, in_dtype="fp8", M=M, path="stream", tile_m=8, tile_n=64,
                                  tile_k=128, max_blocks=10).gemm_config  # fmt: skip
    res = run_gemm("fp8", M, 128, 1024, launch_fn=build_stream_gemm(cfg, probe="late"), cuda=False)
    assert res.ok and res.guard_ok, res


@pytest.mark.parametrize("probe,ck,early", [("b", 0, 0), ("mma", 0, 0), ("nored", 0, 0), ("b", 2, 0), ("mma", 2, 0),
                                            ("b", 0, 1), ("mma", 0, 1)])  # fmt: skip
def test_stream_probes_interpreter(probe, ck, early, interpreter):
    """The stream path's probe kernels (``benchmarks/decode_ladder.py --plan stream``) run on whole and split
    tiles, on cluster tiles (``ck``) and in the ``early`` order: ``b`` and ``mma`` write nothing (rows past M untouched, C wrong), ``nored`` stores each segment's
    partial (C wrong where tiles are split), and an unknown probe is refused."""
    from kernels.gemm.gemm_stream import build_stream_gemm

    cfg = compile_preshuffle_gemm(N=128, K=1024, in_dtype="fp8", M=3, path="stream", tile_m=8, tile_n=64,
                                  tile_k=128, max_blocks=4 if early else 10, cluster_k=ck or None,
                                  streamk="early" if early else None).gemm_config  # fmt: skip
    res = run_gemm("fp8", 3, 128, 1024, launch_fn=build_stream_gemm(cfg, probe=probe), cuda=False,
                   log=lambda *a, **k: None)  # fmt: skip
    assert res.guard_ok and not res.ok, res
    with pytest.raises(ValueError, match="probe"):
        build_stream_gemm(cfg, probe="epilogue")


def test_ladder_configurations_build():
    """Every rung and candidate of benchmarks/decode_ladder.py makes its configuration (a typo fails here, not
    on the H200)."""
    from benchmarks.cases.preshuffle_gemm import variant_kwargs
    from benchmarks.decode_ladder import (
        CANDIDATES,
        CANDIDATES_FIRST,
        LATE,
        PDL_CHECKS,
        PROBE_STEPS,
        STREAM_PLAN,
        STREAM_PLAN2,
        STREAM_PLAN3,
        STREAM_PLAN4,
        SWEEP,
        late_launcher,
        probe_launcher,
        stream_probe_launcher,
    )

    for pdl in (False, True):
        for step in PROBE_STEPS:
            assert probe_launcher(4096, 4096, 16, step, pdl).gemm_config.path == "mma"
    for N, K, M, v in LATE:
        late_launcher(N, K, M, v)
    for N, K, M, v, probe in STREAM_PLAN + STREAM_PLAN2 + STREAM_PLAN3 + STREAM_PLAN4:
        if M and probe:
            assert stream_probe_launcher(N, K, M, v, probe).gemm_config.path == "stream"
        elif M:
            compile_preshuffle_gemm(N=N, K=K, in_dtype="fp8", M=M, **variant_kwargs(v, M, N))
    for N, K, M, v, _ in PDL_CHECKS:
        assert compile_preshuffle_gemm(N=N, K=K, in_dtype="fp8", M=M, **variant_kwargs(v, M, N)).gemm_config.pdl
    from benchmarks import gemm_decode_round as final

    table = [(N, K, final.FINAL_MS, v) for (N, K) in final.VARIANTS for v in final.FINAL_VARIANTS]
    for N, K, ms, v in CANDIDATES_FIRST + CANDIDATES + SWEEP + final.CANDIDATES + table:
        for M in ms:
            cfg = compile_preshuffle_gemm(N=N, K=K, in_dtype="fp8", M=M, **variant_kwargs(v, M, N)).gemm_config
            assert bool(cfg.pdl) == v.endswith(("/pdl", "/pdlpf")), (v, cfg)


B_SMEM_CASES = [  # (in_dtype, M, N, K, compile keywords): the weight's first iterations through shared memory
    ("fp8", 3, 128, 1024, dict(tile_m=16, tile_n=32, tile_k=256, b_smem=2)),  # two of four iterations
    ("fp8", 3, 128, 1024, dict(tile_m=16, tile_n=32, tile_k=256, b_smem=4)),  # all of them
    ("fp8", 17, 128, 1024, dict(tile_m=16, tile_n=32, tile_k=256, b_smem=3, pdl=True, min_blocks=2)),
    ("fp8", 5, 128, 1024, dict(tile_m=8, tile_n=64, tile_k=512, b_smem=1)),
    ("int8", 5, 128, 1024, dict(tile_m=16, tile_n=16, tile_k=512, b_smem=2, pdl=True)),
    ("bf16", 5, 128, 512, dict(tile_m=16, tile_n=32, tile_k=128, b_smem=3)),
]


@pytest.mark.parametrize(
    "in_dtype,M,N,K,kw", B_SMEM_CASES, ids=[f"{c[0]}-M{c[1]}-k{c[4]['b_smem']}" for c in B_SMEM_CASES]
)
def test_b_smem_interpreter(in_dtype, M, N, K, kw, interpreter):
    """``b_smem``: the bulk copies land the block's rows of each K atom where the lanes read them (the layout's
    offsets relative to the block's first row); the rest of K still comes from global memory."""
    res = run_gemm(in_dtype, M, N, K, cuda=False, seed=M + 1, path="mma", **kw)
    assert res.guard_ok and res.ok and res.rel_err < 2**-7, res
    assert f"B of {kw['b_smem']} iteration(s) through shared memory" in res.config, res.config


def test_b_smem_is_rejected_where_it_cannot_work():
    with pytest.raises(ValueError, match="mma path"):
        compile_preshuffle_gemm(N=256, K=256, path="stream", b_smem=1)
    with pytest.raises(ValueError, match="dividing 64"):
        compile_preshuffle_gemm(N=384, K=1024, path="mma", tile_m=16, tile_n=96, tile_k=256, b_smem=1)
    with pytest.raises(ValueError, match="K iterations"):
        compile_preshuffle_gemm(N=256, K=1024, path="mma", tile_m=16, tile_n=32, tile_k=512, b_smem=3)
    with pytest.raises(ValueError, match="do not fit"):  # 128 KB of B and two blocks per SM
        compile_preshuffle_gemm(N=4096, K=4096, path="mma", tile_m=16, tile_n=32, tile_k=1024, b_smem=4,
                                min_blocks=2)  # fmt: skip
