"""The compile pipeline: verify → passes → device code, with a dump of every stage.

Input: the traced module (host ``func.func`` + ``gpu.module @kernels``). Output: the optimized module
and, when asked, the device artifacts (LLVM IR and PTX from :mod:`flydsl.codegen`).

``FLYDSL_DUMP_IR=1`` writes ``FLYDSL_DUMP_DIR/<kernel name>/`` (the kernel's name when the module has
exactly one kernel, else the jit function's): ``00_origin.mlir`` (with ``loc(...)`` source locations),
one ``NN_<pass>.mlir`` per pass, ``NN_llvm_ir.ll`` and ``NN_final_isa.ptx``, and prints one
``[flydsl.compile]`` line per file. ``FLYDSL_DEBUG_PRINT_ORIGIN_IR`` / ``FLYDSL_DEBUG_PRINT_AFTER_ALL``
print the IR to stdout instead. Verifier and codegen failures become :class:`CompileError` carrying the
offending op and its source location.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from .. import passes
from ..codegen import CodegenError, KernelInfo, Target, compile_module
from ..ir import IRError, Op, print_op, verify
from ..utils.env import env
from .cache import warn_unusable
from .diagnostics import CompileError
from .hints import llvm_options_of

__all__ = ["CompileResult", "compile_traced", "run_passes", "codegen", "Dumper", "dump_name", "kernel_ops"]


@dataclass
class CompileResult:
    """The pipeline's output: the optimized module, its text as traced (before any pass) and, once
    generated, its device code and each kernel's metadata."""

    module: Op
    source_ir: str | None = None
    llvm_ir: str | None = None
    ptx: str | None = None
    cubin: bytes | None = None
    kernel_info: dict[str, KernelInfo] = field(default_factory=dict)


def kernel_ops(module: Op) -> list[Op]:
    """The ``gpu.func`` kernels of a module, in order."""
    return [o for o in module.walk() if o.defn.name == "gpu.func" and o.attrs.get("kernel")]


def dump_name(module: Op, fallback: str) -> str:
    ks = kernel_ops(module)
    name = str(ks[0].attrs["sym_name"]) if len(ks) == 1 else fallback
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


class Dumper:
    """Writes numbered stage files into one folder and announces each."""

    def __init__(self, folder: str):
        self.folder = folder
        self.n = 0
        self.ok = True
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            self._unusable(e)
            return
        print(f"[flydsl.compile] FLYDSL_DUMP_IR=1 dir={folder}")

    def _unusable(self, e: OSError) -> None:
        """An unwritable dump folder warns once and the compile goes on without dumps."""
        self.ok = False
        warn_unusable("IR dumps", "FLYDSL_DUMP_DIR", self.folder, e)

    def write(self, label: str, ext: str, text: str) -> str | None:
        if not self.ok:
            return None
        path = os.path.join(self.folder, f"{self.n:02d}_{label}.{ext}")
        try:
            with open(path, "w") as f:
                f.write(text)
        except OSError as e:
            self._unusable(e)
            return None
        print(f"[flydsl.compile] dump {self.n:02d}_{label} -> {path}")
        self.n += 1
        return path


def _verify(module: Op, stage: str) -> None:
    if not env.debug_enable_verifier:
        return
    try:
        verify(module)
    except IRError as e:
        raise CompileError(f"internal error: the IR {stage} is invalid: {e}", e.loc, None, None, op=e.op) from None


def run_passes(module: Op, dumper: Dumper | None, names=None) -> Op:
    """Verify, then run the pass pipeline (verifying and dumping after each pass)."""
    if env.debug_print_origin_ir:
        print(f"// ----- origin IR -----\n{print_op(module, locs=True)}")
    if dumper is not None:
        dumper.write("origin", "mlir", print_op(module, locs=True))
    _verify(module, "after tracing")
    print_after = env.debug_print_after_all

    def after_each(name: str, mod: Op) -> None:
        _verify(mod, f"after pass {name}")
        if dumper is not None:
            dumper.write(name, "mlir", print_op(mod, locs=True))
        if print_after:
            print(f"// ----- IR after {name} -----\n{print_op(mod)}")

    # the fly dialect's records (layouts as traced, shown in 00_origin) go first, before any named pass
    passes.get_pass("fly-layout-lowering")(module)
    names = passes.DEFAULT_PIPELINE if names is None else names
    passes.run_pipeline(module, list(names), after_each=after_each)
    return module


def codegen_target(arch: str, hints: dict | None = None) -> Target:
    """The code generator's target for ``arch`` under the codegen-affecting environment and hints."""
    kw = {}
    level = env.compile_opt_level  # validated: 0-3, or None to choose by kernel size
    if level is not None:
        kw["opt_level"] = level
    if env.libdevice:
        kw["libdevice"] = env.libdevice
    if hints and hints.get("fast_fp_math"):
        kw["math"] = "approx"
    if hints and hints.get("maxnreg"):
        kw["maxnreg"] = int(hints["maxnreg"])
    if hints and hints.get("llvm_options"):
        kw["llvm_options"] = llvm_options_of(hints)  # checked by check_hints before the trace
    return Target(arch=arch, **kw)


def codegen(result: CompileResult, arch: str, dumper: Dumper | None, hints: dict | None = None) -> CompileResult:
    """LLVM IR and PTX of the module's kernels (dumped as ``NN_llvm_ir.ll`` / ``NN_final_isa.ptx``)."""
    try:
        ck = compile_module(result.module, codegen_target(arch, hints))
    except CodegenError as e:
        raise CompileError(e.raw_message, e.loc, e.fix, None, op=e.op) from None
    result.llvm_ir, result.ptx, result.cubin = ck.llvm_ir, ck.ptx, ck.cubin
    result.kernel_info = ck.kernels
    if dumper is not None:
        dumper.write("llvm_ir", "ll", ck.llvm_ir)
        dumper.write("final_isa", "ptx", ck.ptx)
    return result


def compile_traced(module: Op, fallback_name: str, arch: str, *, want_ptx: bool, hints=None) -> CompileResult:
    """The whole pipeline on a traced module (in place): passes, then device code when ``want_ptx`` (or
    for the dumps)."""
    dumper = Dumper(os.path.join(env.dump_dir, dump_name(module, fallback_name))) if env.dump_ir else None
    source_ir = print_op(module)  # FlyDSL's ``source_ir``: what was traced (passes fold and drop ops)
    run_passes(module, dumper)
    result = CompileResult(module, source_ir)
    if want_ptx:
        codegen(result, arch, dumper, hints)
    elif dumper is not None:
        try:  # device code only for the dump: a CPU run does not need it to succeed
            codegen(result, arch, dumper, hints)
        except CompileError as e:
            print(f"[flydsl.compile] no device code for the dump: {e.message}")
    return result
