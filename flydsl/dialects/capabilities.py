"""What target-specific instructions need from the GPU: one table, read at trace time and at code generation.

An op declares the capabilities it needs with its definition (``OpDef(..., requires="cp_async")``, or a
function of the op when they depend on its types: an fp8 ``mma_sync`` needs ``mma_fp8``). Two checks read
that declaration and this table:

* **trace time** — the compiler checks every op as it is built against the kernel's target (the
  ``ARCH``/device architecture) and raises catalogue error FLY520 at the user's line: an fp8 MMA traced
  for sm_80 fails there, before the CPU interpreter or LLVM sees it;
* **code generation** — the LLVM emitter checks the same declaration again before lowering each op (IR
  built by hand, or compiled for another target than it was traced for), raises a ``CodegenError`` with
  the same message, and records the PTX ISA version the instruction needs.

Features used inside other lowerings (fp8 conversions, bf16 arithmetic, ``tanh.approx``) are looked up
by name in the same table by the code generator. Minimum PTX versions were measured against LLVM 22's
NVPTX back end (a lower ``+ptxNN`` than an instruction needs makes LLVM exit the process).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..ir import Op

__all__ = [
    "Capability", "CAPABILITIES", "PTX_OVERRIDES", "MESSAGE", "Gap", "requirements", "capability_gap", "min_ptx",
    "registers_fit", "max_registers",
]  # fmt: skip


@dataclass(frozen=True)
class Capability:
    """A family of instructions: the lowest compute capability and PTX ISA version that have it.

    ``what`` names it in the user's words (a singular noun phrase: "``what`` needs sm_89 or newer");
    ``arch_specific`` marks instructions of the ``a`` targets only (sm_90a's wgmma, setmaxnreg);
    ``last_sm`` the last architecture that has it (wgmma: Hopper only — LLVM cannot select it for sm_100a)."""

    sm: int
    ptx: int
    what: str
    fix: str
    arch_specific: bool = False
    last_sm: int | None = None


_HOPPER_FIX = "compile for sm_90a (ARCH=sm_90a: H100/H200); on older GPUs use cp.async, mma.sync and bar.sync"

CAPABILITIES: dict[str, Capability] = {
    # numerics inside other lowerings (codegen/nvptx.py)
    "fp8": Capability(89, 78, "an fp8 (e4m3/e5m2) conversion",
                      "compile for sm_89 or newer (e.g. sm_90a), or keep fp8 data as i8"),
    "tanh_approx": Capability(75, 70, "tanh.approx.f32", "compile for sm_75 or newer"),
    "bf16": Capability(80, 70, "bf16 arithmetic", "compile for sm_80 or newer"),
    "bf16_int_cvt": Capability(90, 78, "an integer -> bf16 conversion in one cvt",
                               "(emulated exactly on older targets)"),
    "scoped_atomics": Capability(70, 60, "a scoped atomic or fence", "compile for sm_70 or newer"),
    "warp_sync": Capability(70, 60, "bar.warp.sync", "compile for sm_70 or newer"),
    "cluster": Capability(90, 78, "a thread block cluster", "compile for sm_90 or newer"),
    "st_async": Capability(90, 81, "a store into a cluster block's shared memory completing on its mbarrier (st.async)",
                           "compile for sm_90 or newer, or store through map_shared and synchronize the cluster"),
    "tma_multicast": Capability(90, 80, "a multicast bulk copy into several blocks of a cluster "
                                "(cp.async.bulk .multicast::cluster)",
                                "compile for sm_90 or newer, or copy into each block with bulk_copy_g2s"),
    "mbarrier_cluster": Capability(90, 80, "an arrive on an mbarrier of another block of the cluster "
                                   "(mbarrier.arrive.shared::cluster)",
                                   "compile for sm_90 or newer, or synchronize the cluster with cluster_arrive/wait"),
    "cluster_relaxed": Capability(90, 80, "a relaxed cluster arrive (barrier.cluster.arrive.relaxed)",
                                  "compile for sm_90 or newer, or use the release arrive"),
    # warp-level tensor cores and asynchronous copies (dialects/nvvm.py)
    "mma_sync": Capability(80, 70, "a warp-level MMA (mma.sync)", "compile for sm_80 or newer"),
    "mma_fp8": Capability(89, 84, "an fp8 (e4m3/e5m2) warp-level MMA (mma.sync)",
                          "compile for sm_89 or newer (e.g. sm_90a), or use bf16 operands"),
    "mma_fp8_f16": Capability(89, 87, "an fp8 mma.sync with f16 accumulators", "use f32 accumulators (PTX 8.4)"),
    "ldmatrix": Capability(75, 65, "ldmatrix", "compile for sm_75 or newer"),
    "stmatrix": Capability(90, 78, "stmatrix",
                           "compile for sm_90 or newer, or store the fragment with ordinary shared stores"),
    "cp_async": Capability(80, 70, "cp.async (an asynchronous global -> shared copy)",
                           "compile for sm_80 or newer, or copy through registers (fx.UniversalCopy*)"),
    # Hopper (dialects/nvvm_sm90.py)
    "mbarrier": Capability(90, 80, "a Hopper mbarrier operation (transaction counts, try_wait.parity)", _HOPPER_FIX),
    "tma": Capability(90, 80, "a TMA or bulk copy (cp.async.bulk) or an async-proxy fence", _HOPPER_FIX),
    "elect": Capability(90, 80, "elect.sync", _HOPPER_FIX),
    "griddepcontrol": Capability(90, 78, "programmatic dependent launch (griddepcontrol)", _HOPPER_FIX),
    "wgmma": Capability(90, 80, "a warpgroup MMA (wgmma)", "compile for sm_90a (H100/H200), or use warp-level mma.sync",
                        arch_specific=True, last_sm=90),
    "setmaxnreg": Capability(90, 80, "setmaxnreg", "compile for sm_90a, or leave the register counts to ptxas",
                             arch_specific=True),
}  # fmt: skip

# LLVM 22 selects the fp8 -> f16x2 conversions on sm_89 only from PTX 8.1 (sm_90+: 7.8)
PTX_OVERRIDES = {("fp8", 89): 81}

# the message of both checks (catalogue FLY520 at trace time; CodegenError in code generation)
MESSAGE = "{what} needs {need}; this kernel is compiled for {arch}"

_SM = re.compile(r"^sm_(\d+)([af]?)$")


@dataclass(frozen=True)
class Gap:
    """Why a target lacks a capability: the fields of :data:`MESSAGE` and the fix."""

    what: str
    need: str
    arch: str
    fix: str

    @property
    def message(self) -> str:
        return MESSAGE.format(what=self.what, need=self.need, arch=self.arch)


def capability_gap(feature: str, arch: str) -> Gap | None:
    """None when ``arch`` (``"sm_80"``, ``"sm_90a"``, ``"gfx942"``) has ``feature``, else what it lacks."""
    cap = CAPABILITIES[feature]
    first = f"sm_{cap.sm}{'a' if cap.arch_specific else ''}"
    need = first if cap.last_sm == cap.sm else f"{first} or newer"
    m = _SM.match(arch)
    if m is None:
        return Gap(
            cap.what, f"an NVIDIA GPU ({need})", arch, "this is an NVIDIA instruction: run the kernel on an NVIDIA GPU"
        )
    sm = int(m.group(1))
    if sm < cap.sm:
        return Gap(cap.what, need, arch, cap.fix)
    if cap.last_sm is not None and sm > cap.last_sm:
        return Gap(cap.what, f"{need} (later GPUs do not have it)", arch, cap.fix)
    if cap.arch_specific and m.group(2) != "a":
        return Gap(
            cap.what, f"the architecture-specific target sm_{sm}a", arch, f"compile for sm_{sm}a (ARCH=sm_{sm}a)"
        )
    return None


def min_ptx(feature: str, sm: int) -> int:
    """The lowest PTX ISA version (``84`` = 8.4) with ``feature`` on compute capability ``sm``."""
    return PTX_OVERRIDES.get((feature, sm), CAPABILITIES[feature].ptx)


def requirements(op: Op) -> tuple[str, ...]:
    """The capabilities ``op`` needs, from its definition's ``requires`` (a name, a tuple of names, or a
    function of the op returning either)."""
    req = op.defn.requires
    if req is None:
        return ()
    if callable(req):
        req = req(op)
    return (req,) if isinstance(req, str) else tuple(req)


# -- registers of a block (sm_80 / sm_90: 65536 per SM over four sub-partitions; CUDA's occupancy calculator) ----------
_SUB_PARTITION_REGS, _REG_UNIT = 16384, 256  # each sub-partition's registers; a warp's are allocated in units of 256


def registers_fit(regs: int, threads: int) -> bool:
    """Whether a block of ``threads`` threads at ``regs`` registers per thread can launch: a warp takes ``regs x 32``
    registers rounded up to a multiple of 256, and each of the SM's four sub-partitions holds 16384 for its share
    (a quarter, rounded up) of the block's warps."""
    warps = -(-threads // 32)
    per_warp = -(-regs * 32 // _REG_UNIT) * _REG_UNIT
    return -(-warps // 4) * per_warp <= _SUB_PARTITION_REGS


def max_registers(threads: int) -> int:
    """The most registers per thread (a multiple of 8, at most 255) with which a block of ``threads`` threads
    launches (:func:`registers_fit`): 1024 threads 64, 768 threads 80, 512 threads 128."""
    warps = -(-threads // 32)
    return min(255, _SUB_PARTITION_REGS // -(-warps // 4) // _REG_UNIT * _REG_UNIT // 32)


_SM_THREADS, _SM_BLOCKS = 2048, 32  # an sm_80 / sm_90 SM's resident threads and blocks


def blocks_per_sm(regs: int, threads: int) -> int:
    """How many blocks of ``threads`` threads at ``regs`` registers per thread one SM holds at once by its registers
    (:func:`registers_fit`'s rule, per sub-partition), threads (2048) and blocks (32); 0 where one does not fit (or
    ``regs`` is not 1-255, ``threads`` not 1-1024). Shared memory is the caller's to count. Exact for blocks of a
    multiple of 128 threads; for others it can count one block fewer than CUDA's calculator (which places a block's
    warps over the sub-partitions more finely)."""
    if not (1 <= regs <= 255 and 1 <= threads <= 1024):
        return 0
    warps = -(-threads // 32)
    per_warp = -(-regs * 32 // _REG_UNIT) * _REG_UNIT
    by_regs = _SUB_PARTITION_REGS // (-(-warps // 4) * per_warp)
    return min(by_regs, _SM_THREADS // threads, _SM_BLOCKS)
