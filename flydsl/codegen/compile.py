"""LLVM IR text → PTX with llvmlite (parse, verify, link libdevice, optimize, emit), and cubins.

``compile_module(module_op, target)`` is the whole back end: it emits LLVM IR, compiles it and
returns a :class:`CompiledKernels` (PTX text, kernel names and parameter lists, static shared memory,
the LLVM IR, optionally a cubin). ``compile_ptx(llvm_text, target)`` is the LLVM part alone.

Optimization levels are chosen by module size (override with ``Target.opt_level``/``codegen_opt``):
small modules get the full O3 middle end and NVPTX codegen at level 3; larger ones keep O3/O2 in the
middle end but NVPTX codegen at level 0 (whose cost is superlinear: 33 s at 30k instructions), and
the largest drop to O1 — ptxas does the scheduling and register allocation anyway. The thresholds and
their measurements are in docs/codegen.md.

LLVM kills the process on some errors ("Cannot select", "no libcall available"). The emitter never
produces such IR for the target (capabilities are checked per op); ``compile_ptx`` also scans the
intrinsics of any text it is given. ``isolate=True`` runs LLVM's code generator in a forked child so
that even an unforeseen fatal error becomes a :class:`CodegenError`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field

from . import llvm_options
from .backends import hooks_for
from .errors import CodegenError
from .isolated import run_isolated
from .kernel_info import KernelInfo
from .libdevice import find_libdevice, link_libdevice
from .llvm_emitter import emit_module
from .nvptx import min_ptx_for_arch
from .target import Target

__all__ = [
    "CompiledKernels",
    "compile_ptx",
    "compile_module",
    "choose_opt_levels",
    "count_instructions",
    "ptx_to_cubin",
    "find_ptxas",
    "run_ptxas",
    "OPT_THRESHOLDS",
    "run_isolated",
]

# (max instructions, middle-end level, NVPTX codegen level, load/store vectorizer), first match wins
OPT_THRESHOLDS = ((3000, 3, 3, True), (8000, 1, 1, True), (None, 1, 1, False))

_LOCK = threading.RLock()
_INIT = False
_TMS: dict[tuple, object] = {}


@dataclass
class CompiledKernels:
    """The result of compiling one module for one target."""

    ptx: str
    kernels: dict[str, KernelInfo]
    target: Target
    llvm_ir: str
    ptx_version: int
    cubin: bytes | None = None
    stats: dict = field(default_factory=dict)

    @property
    def kernel_names(self) -> list[str]:
        return list(self.kernels)

    def kernel(self, name: str) -> KernelInfo:
        try:
            return self.kernels[name]
        except KeyError:
            raise KeyError(f"no kernel {name!r}; compiled kernels: {', '.join(self.kernels)}") from None


def _llvm():
    global _INIT
    import llvmlite.binding as llvm  # lazy: loading LLVM takes ~50 ms, and only compiling needs it

    if not _INIT:
        with _LOCK:
            if not _INIT:
                llvm.initialize_all_targets()
                llvm.initialize_all_asmprinters()
                _INIT = True
    return llvm


def _target_machine(triple: str, arch: str, ptx: int, codegen_opt: int):
    key = (triple, arch, ptx, codegen_opt)
    tm = _TMS.get(key)
    if tm is None:
        llvm = _llvm()
        tm = llvm.Target.from_triple(triple).create_target_machine(cpu=arch, features=f"+ptx{ptx}", opt=codegen_opt)
        _TMS[key] = tm
    return tm


def count_instructions(llvm_text: str) -> int:
    """Instructions in LLVM IR text (indented lines that are not labels)."""
    return sum(1 for line in llvm_text.splitlines() if line.startswith("  ") and not line.endswith(":"))


def choose_opt_levels(n_instructions: int, target: Target) -> tuple[int, int, bool]:
    """(middle-end level, codegen level, load/store vectorizer on) for a module of ``n_instructions``."""
    mid, cg, lsv = next(row[1:] for row in OPT_THRESHOLDS if row[0] is None or n_instructions <= row[0])
    if target.opt_level is not None:
        mid = target.opt_level
    if target.codegen_opt is not None:
        cg = target.codegen_opt
    return mid, cg, lsv


_LINE_RE = re.compile(r"<string>:(\d+):(\d+): error: (.*)")


def _wrap_llvm_error(err: Exception, text: str, stage: str) -> CodegenError:
    msg = str(err).strip()
    m = _LINE_RE.search(msg)
    line = None
    if m:
        n = int(m.group(1))
        lines = text.splitlines()
        line = lines[n - 1] if 0 < n <= len(lines) else None
        msg = f"line {n}: {m.group(3)}"
    elif stage == "verify":
        bad = [ln for ln in msg.splitlines() if ln.startswith("  ")]
        line = bad[0] if bad else None
        msg = msg.splitlines()[0] if msg else msg
    return CodegenError(
        f"LLVM rejected the generated IR ({stage}): {msg}",
        llvm_line=line,
        fix="this is a flydsl code generator bug; please report it with the IR dump (FLYDSL_DUMP_IR=1)",
    )


# -- intrinsics that LLVM's NVPTX back end cannot select (it would kill the process) ----------------

_NEVER_ON_NVPTX = re.compile(
    r"^llvm\.(exp|exp10|log|log2|log10|sin|cos|tan|asin|acos|atan|atan2|sinh|cosh|tanh|pow|powi|ldexp|frexp)\."
)
_INTRINSIC_SM = (
    ("llvm.nvvm.ff.to.e", 89), ("llvm.nvvm.f16x2.to.e", 89), ("llvm.nvvm.e4m3x2.to", 89),
    ("llvm.nvvm.e5m2x2.to", 89), ("llvm.nvvm.tanh.approx", 75), ("llvm.nvvm.cp.async.bulk", 90),
    ("llvm.nvvm.barrier.cluster", 90), ("llvm.nvvm.mapa", 90), ("llvm.nvvm.stmatrix", 90),
    ("llvm.nvvm.elect.sync", 90), ("llvm.nvvm.fence.proxy", 90), ("llvm.nvvm.griddepcontrol", 90),
    ("llvm.nvvm.wgmma", 90), ("llvm.nvvm.setmaxnreg", 90), ("llvm.nvvm.tcgen05", 100),
    ("llvm.nvvm.mma.m16n8k32.row.col.f", 89), ("llvm.nvvm.mma.m16n8", 80), ("llvm.nvvm.ldmatrix", 75),
    ("llvm.nvvm.cp.async.", 80),
    ("llvm.nvvm.mbarrier.try.wait", 90), ("llvm.nvvm.mbarrier.expect.tx", 90), ("llvm.nvvm.prefetch.tensormap", 90),
    ("llvm.nvvm.mbarrier.arrive.expect.tx", 90), ("llvm.nvvm.fence.mbarrier_init", 90),
    ("llvm.nvvm.mbarrier.arrive.scope.cta.space.cluster", 90),
)  # fmt: skip
_ARCH_SPECIFIC = ("llvm.nvvm.wgmma", "llvm.nvvm.setmaxnreg", "llvm.nvvm.tcgen05")
# prefix -> the last architecture that has it (LLVM 22 cannot select wgmma for sm_100a/sm_120a: it aborts)
_INTRINSIC_LAST_SM = (("llvm.nvvm.wgmma", 90),)
# (prefix, sm) -> lowest PTX version at which LLVM selects it there
_INTRINSIC_PTX = {("llvm.nvvm.e4m3x2.to", 89): 81, ("llvm.nvvm.e5m2x2.to", 89): 81}
# prefix -> lowest PTX version at which LLVM selects it on every architecture
_INTRINSIC_MIN_PTX = (("llvm.nvvm.mma.m16n8k32.row.col.f32.e", 84), ("llvm.nvvm.mma.m16n8k32.row.col.f16.e", 87))
_DECL_RE = re.compile(r"^declare [^@]*@\"?(llvm\.[A-Za-z0-9_.]+)", re.M)


def check_intrinsics(llvm_text: str, target: Target, ptx_version: int | None = None) -> None:
    """Raise :class:`CodegenError` for intrinsics that the target's back end cannot select."""
    sm = target.sm
    for name in set(_DECL_RE.findall(llvm_text)):
        if _NEVER_ON_NVPTX.match(name) and not (name.startswith("llvm.exp2.") and name.endswith(("f32", "f16"))):
            raise CodegenError(
                f"{name} has no NVPTX lowering (LLVM would exit the process)",
                fix="use the nvvm approximations (llvm.nvvm.ex2.approx.f …) or libdevice (__nv_expf …)",
            )
        for prefix, need in _INTRINSIC_SM:
            if name.startswith(prefix) and sm < need:
                raise CodegenError(f"{name} needs sm_{need} or newer; the target is {target.arch}")
        for prefix, last in _INTRINSIC_LAST_SM:
            if name.startswith(prefix) and sm > last:
                raise CodegenError(f"{name} exists on sm_{last} only (later GPUs do not have it), not {target.arch}")
        if name.startswith(_ARCH_SPECIFIC) and not target.arch_specific:
            raise CodegenError(f"{name} needs an architecture-specific target such as sm_90a, not {target.arch}")
        for prefix, need in _INTRINSIC_MIN_PTX:
            if ptx_version is not None and name.startswith(prefix) and ptx_version < need:
                raise CodegenError(f"{name} needs PTX {need / 10:.1f} (got {ptx_version / 10:.1f})")
        for (prefix, on_sm), need in _INTRINSIC_PTX.items():
            if ptx_version is not None and sm == on_sm and name.startswith(prefix) and ptx_version < need:
                raise CodegenError(f"{name} needs PTX {need / 10:.1f} on {target.arch} (got {ptx_version / 10:.1f})")


def _resolve_ptx_version(target: Target, needs: dict[str, int]) -> int:
    base = min_ptx_for_arch(target)
    need = max([base, *needs.values()])
    if target.ptx_version is not None:
        if target.ptx_version < need:
            why = max(needs, key=lambda k: needs[k]) if needs and max(needs.values()) > base else target.arch
            raise CodegenError(
                f"PTX ISA {target.ptx_version / 10:.1f} is too old for {why} (needs {need / 10:.1f})",
                fix=f"use Target(ptx_version={need}) or leave ptx_version unset",
            )
        need = target.ptx_version
    if need > target.max_ptx_version:
        raise CodegenError(
            f"the kernel needs PTX ISA {need / 10:.1f} but the driver accepts at most "
            f"{target.max_ptx_version / 10:.1f}",
            fix="update the NVIDIA driver and raise Target.max_ptx_version, or avoid the newer features",
        )
    return need


_LSV_STATE: list[bool | None] = [None]


def _codegen(mod, triple: str, arch: str, ptx: int, cg: int, lsv: bool) -> str:
    """Emit assembly; ``lsv`` switches NVPTX's load/store vectorizer (a process-wide LLVM option,
    quadratic in the loads of a block: 85% of codegen time for large straight-line kernels)."""
    llvm = _llvm()
    with _LOCK:
        if _LSV_STATE[0] is not lsv:
            llvm.set_option("flydsl", f"-disable-nvptx-load-store-vectorizer={'false' if lsv else 'true'}")
            _LSV_STATE[0] = lsv
        return _target_machine(triple, arch, ptx, cg).emit_assembly(mod)


def _optimize(mod, tm, mid: int, linked: bool) -> None:
    llvm = _llvm()
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=mid))
    pb.getModulePassManager().run(mod, pb)
    if linked and mid == 0:
        mpm = llvm.create_new_module_pass_manager()
        mpm.add_global_dead_code_eliminate_pass()
        mpm.run(mod, pb)


def _with_options(options: tuple, mod, triple: str, arch: str, ptx: int, cg: int, lsv: bool, mid: int, linked: bool):
    """(In a child process.) The ``llvm_options`` hint set, then optimize and emit under them."""
    llvm_options.apply(options)
    _optimize(mod, _target_machine(triple, arch, ptx, cg), mid, linked)
    return _codegen(mod, triple, arch, ptx, cg, lsv)


def compile_ptx(
    llvm_text: str,
    target: Target | None = None,
    *,
    ptx_version: int | None = None,
    isolate: bool = False,
    stats: dict | None = None,
) -> str:
    """Compile LLVM IR text to PTX for ``target`` (see the module docstring for the levels)."""
    target = target or Target()
    llvm = _llvm()
    hooks = hooks_for(target)
    st = stats if stats is not None else {}
    t0 = time.perf_counter()
    ptx = ptx_version if ptx_version is not None else _resolve_ptx_version(target, {})
    check_intrinsics(llvm_text, target, ptx)
    try:
        mod = llvm.parse_assembly(llvm_text)
    except RuntimeError as e:
        raise _wrap_llvm_error(e, llvm_text, "parse") from None
    try:
        mod.verify()
    except RuntimeError as e:
        raise _wrap_llvm_error(e, llvm_text, "verify") from None
    t1 = time.perf_counter()
    linked = False
    if "@__nv_" in llvm_text:
        path = find_libdevice(target.libdevice)
        if path is None:
            raise CodegenError(
                "the module calls libdevice (__nv_*) functions but libdevice.10.bc was not found",
                fix="pip install nvidia-nvvm, install the CUDA toolkit, or use Target(math='approx')",
            )
        link_libdevice(mod, path)
        linked = True
    n = count_instructions(llvm_text)
    mid, cg, lsv = choose_opt_levels(n, target)
    tm = _target_machine(hooks.triple, target.arch, ptx, cg)
    t2 = time.perf_counter()
    if target.llvm_options:  # process-wide LLVM options: only in a child that compiles this module
        llvm_options.check(target.llvm_options)
        out = run_isolated(
            _with_options, target.llvm_options, mod, hooks.triple, target.arch, ptx, cg, lsv, mid, linked
        )
        t3 = t4 = time.perf_counter()
    else:
        _optimize(mod, tm, mid, linked)
        t3 = time.perf_counter()
        if isolate:
            out = run_isolated(_codegen, mod, hooks.triple, target.arch, ptx, cg, lsv)
        else:
            out = _codegen(mod, hooks.triple, target.arch, ptx, cg, lsv)
        t4 = time.perf_counter()
    st.update(
        instructions=n,
        opt_level=mid,
        codegen_opt=cg,
        load_store_vectorizer=lsv,
        ptx_version=ptx,
        libdevice=linked,
        parse_s=t1 - t0,
        link_s=t2 - t1,
        optimize_s=t3 - t2,
        codegen_s=t4 - t3,
    )
    return out


def compile_module(module_op, target: Target | None = None, *, isolate: bool = False) -> CompiledKernels:
    """IR module (``builtin.module`` or ``gpu.module``) → :class:`CompiledKernels`."""
    target = target or Target()
    t0 = time.perf_counter()
    me = emit_module(module_op, target)
    text = me.text()
    t1 = time.perf_counter()
    ptx_version = _resolve_ptx_version(target, me.ptx_needs)
    stats: dict = {"emit_s": t1 - t0}
    ptx = compile_ptx(text, target, ptx_version=ptx_version, isolate=isolate, stats=stats)
    cubin = None
    if target.cubin:
        t2 = time.perf_counter()
        cubin = ptx_to_cubin(ptx, target.arch)
        stats["cubin_s"] = time.perf_counter() - t2
    return CompiledKernels(
        ptx=ptx,
        kernels={k.name: k for k in me.kernels},
        target=target,
        llvm_ir=text,
        ptx_version=ptx_version,
        cubin=cubin,
        stats=stats,
    )


# -- PTX → cubin ------------------------------------------------------------------------------------


def _assembler_hint(log: str) -> str:
    """What to change, in the kernel author's terms, for assembler errors a launch configuration causes."""
    if "C7602" in log or "Insufficient registers" in log:
        return (
            "\nThe kernel needs more registers per thread than its cap allows: the cap comes from its maxnreg hint or"
            " from the blocks per SM it asks for (min_blocks / .minnctapersm: 65536 / (blocks x threads)). Raise the"
            " cap, ask for fewer blocks per SM, or make the kernel's per-thread work (its tile) smaller."
        )
    return ""


def ptx_to_cubin(ptx: str, arch: str, options: tuple[str, ...] = ("-O3",)) -> bytes | None:
    """Assemble PTX into a cubin with nvJitLink (no GPU needed); None when nvJitLink is missing."""
    try:
        from cuda.bindings import nvjitlink  # optional dependency (the cuda extra)
    except ImportError:
        return None
    opts = [f"-arch={arch}", *options]
    try:
        h = nvjitlink.create(len(opts), opts)
    except Exception:  # noqa: BLE001 - the shared library is not installed
        return None
    try:
        data = ptx.encode()
        try:
            nvjitlink.add_data(h, nvjitlink.InputType.PTX, data, len(data), "flydsl.ptx")
            nvjitlink.complete(h)
        except Exception as e:  # noqa: BLE001
            size = nvjitlink.get_error_log_size(h)
            log = bytearray(size)
            nvjitlink.get_error_log(h, log)
            text = log.decode(errors="replace").replace("\x00", "").strip()  # (the log ends in a NUL)
            raise CodegenError(f"nvJitLink rejected the PTX: {text}{_assembler_hint(text)}") from e
        size = nvjitlink.get_linked_cubin_size(h)
        buf = bytearray(size)
        nvjitlink.get_linked_cubin(h, buf)
        return bytes(buf)
    finally:
        nvjitlink.destroy(h)


def find_ptxas() -> str | None:
    """Path of a ``ptxas`` (pip ``nvidia-cuda-nvcc`` wheel, CUDA toolkit, or PATH), or None."""
    try:
        import cuda.pathfinder as pf  # optional dependency (cuda-bindings' locator)

        p = pf.find_nvidia_binary_utility("ptxas")
        if p:
            return p
    except Exception:  # noqa: BLE001
        pass
    return shutil.which("ptxas")


def run_ptxas(ptx: str, arch: str, ptxas: str | None = None, extra: tuple[str, ...] = ()) -> str:
    """Assemble PTX with ptxas (``-v``); returns its log (registers, spills) or raises CodegenError."""
    exe = ptxas or find_ptxas()
    if exe is None:
        raise CodegenError("ptxas was not found", fix="pip install nvidia-cuda-nvcc")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        res = subprocess.run(
            [exe, f"-arch={arch}", "-v", src, "-o", os.path.join(d, "k.cubin"), *extra],
            capture_output=True,
            text=True,
            check=False,
        )
    if res.returncode != 0:
        raise CodegenError(f"ptxas rejected the PTX for {arch}:\n{res.stderr.strip()}{_assembler_hint(res.stderr)}")
    return res.stderr
