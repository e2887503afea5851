"""Helpers shared by the compiler's tests (frontend, jit, cache, errors): run on the CPU interpreter with
the disk cache off unless a test asks otherwise, and look at traced IR."""

from __future__ import annotations

import re

import pytest

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr import typing as fxt
from flydsl.ir import print_op

# the names of fx that these tests use from flydsl.expr.typing (re-exported by fx)
Tensor = getattr(fx, "Tensor", fxt.Tensor)
Constexpr = getattr(fx, "Constexpr", fxt.Constexpr)
Stream = getattr(fx, "Stream", fxt.Stream)

__all__ = [
    "Tensor",
    "Constexpr",
    "Stream",
    "cpu_device",
    "traced",
    "count_ops",
    "facade_module",
    "host_function",
    "flyc",
    "fx",
]


@pytest.fixture
def cpu_device(monkeypatch, tmp_path):
    """The CPU interpreter, no disk cache, no dumps; cache dir and dump dir inside the test's tmp dir."""
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cpu")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setenv("FLYDSL_RUNTIME_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FLYDSL_DUMP_DIR", str(tmp_path / "dump"))
    for v in ("FLYDSL_DUMP_IR", "COMPILE_ONLY", "ARCH", "FLYDSL_GPU_ARCH", "FLYDSL_TRACE_MAX_OPS"):
        monkeypatch.delenv(v, raising=False)
    return tmp_path


def traced(jit_fn, *args, **kwargs) -> str:
    """The MLIR text (no locations) of the module ``jit_fn`` traces for these arguments, before passes."""
    return print_op(jit_fn.trace(*args, **kwargs))


def count_ops(text: str, name: str) -> int:
    """Occurrences of op ``name`` in printed IR (pretty or generic form)."""
    return len(re.findall(rf'(?<![\w.]){re.escape(name)}(?![\w.])|"{re.escape(name)}"', text))


def facade_module(build, arg_types) -> str:
    """The verified text of a module built through FlyDSL's MLIR facade: ``build(*args)`` fills the body of a
    function ``t`` taking ``arg_types`` (facade types) and returning nothing."""
    from flydsl._mlir import ir
    from flydsl._mlir.dialects import func

    with ir.Context() as ctx, ir.Location.unknown(ctx):
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            f = func.FuncOp("t", ir.FunctionType.get(arg_types, []))
            with ir.InsertionPoint(f.add_entry_block()):
                build(*f.entry_block.arguments)
                func.ReturnOp([])
        assert module.operation.verify()
        return str(module)


_ENGINES: list = []  # NOTE: freeing an MCJIT engine and its module can crash; keep them for the session


def host_function(arg_types, res_type, body, unsigned: bool = False):
    """``(f, llvm_text)``: ``f(*args)`` runs the GPU lowering of ``body(*args)`` on the host (llvmlite's
    MCJIT; only for IR without NVVM intrinsics), to hold a lowering to the interpreter's semantics.
    ``unsigned``: integers cross as unsigned C types."""
    import ctypes

    import llvmlite.binding as llvm

    from flydsl.codegen import Target, emit_llvm
    from flydsl.dialects import func, gpu
    from flydsl.ir import InsertionPoint, new_module, verify
    from flydsl.ir import types as T

    mod = new_module()
    gm = gpu.build_gpu_module()
    mod.regions[0].blocks[0].append(gm)
    f = func.build_func(gpu.func, "f", list(arg_types), [res_type])
    gm.regions[0].blocks[0].append(f)
    with InsertionPoint(f.regions[0].blocks[0]):
        gpu.return_(body(*f.regions[0].blocks[0].args))
    verify(mod)
    text = emit_llvm(mod, Target(arch="sm_90a"))
    text = "\n".join(ln for ln in text.splitlines() if not ln.startswith("target "))
    text = text.replace("define internal", "define")
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    m = llvm.parse_assembly(text)
    m.verify()
    ee = llvm.create_mcjit_compiler(m, llvm.Target.from_default_triple().create_target_machine())
    ee.finalize_object()
    ct = {T.i32: ctypes.c_int32, T.i64: ctypes.c_int64, T.f32: ctypes.c_float, T.i1: ctypes.c_bool}
    if unsigned:
        ct.update({T.i32: ctypes.c_uint32, T.i64: ctypes.c_uint64})
    cfn = ctypes.CFUNCTYPE(ct[res_type], *[ct[t] for t in arg_types])(ee.get_function_address("f"))
    _ENGINES.append((cfn, ee, m))
    return cfn, text
