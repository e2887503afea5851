"""NVPTX target hooks: NVVM intrinsics, capabilities, PTX versions, printf, fp8 and cache hints.

| IR | LLVM (NVPTX) | PTX |
|---|---|---|
| gpu.thread_id/block_id/block_dim/grid_dim | ``llvm.nvvm.read.ptx.sreg.{tid,ctaid,ntid,nctaid}.x`` | ``%tid.x`` … |
| gpu.lane_id | ``llvm.nvvm.read.ptx.sreg.laneid`` | ``%laneid`` |
| gpu.barrier | ``llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)`` | ``bar.sync 0`` |
| gpu.fence cta/gpu/sys | ``fence syncscope("block"/"device"/"") seq_cst`` | ``fence.sc.{cta,gpu,sys}`` |
| gpu.shuffle | ``llvm.nvvm.shfl.sync.{bfly,up,down,idx}.{i32,f32}`` | ``shfl.sync.*.b32`` |
| gpu.vote | ``llvm.nvvm.vote.{all,any,ballot}.sync`` | ``vote.sync.*`` |
| gpu.printf | ``vprintf(format, packed args)`` | ``call vprintf`` |
| fp8 casts | ``llvm.nvvm.{ff,f16x2}.to.{e4m3,e5m2}x2.rn``, ``…x2.to.f16x2.rn`` | ``cvt.rn.satfinite.e4m3x2.f32`` … |

Kernels use the ``ptx_kernel`` calling convention; ``known_block_size`` becomes
``"nvvm.reqntid"`` (PTX ``.reqntid``), ``max_registers`` ``"nvvm.maxnreg"``, ``min_blocks_per_sm``
``"nvvm.minctasm"`` and ``cluster_dims`` ``"nvvm.cluster_dim"``.
"""

from __future__ import annotations

from ..dialects.capabilities import CAPABILITIES, capability_gap, min_ptx
from ..ir import FloatType, PointerType, VectorType
from .emit_rounding import f64_to_f32_round_odd
from .errors import CodegenError
from .intrinsics import constant_int, vector_parts
from .libdevice import find_libdevice
from .llvm_types import is_fp8, llvm_type, store_size
from .nvptx_math import lower_math
from .nvptx_printf import emit_printf
from .target import Target, TargetHooks

__all__ = ["NVPTXHooks", "ARCH_MIN_PTX", "NVPTX_DATALAYOUT", "min_ptx_for_arch"]

NVPTX_DATALAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"

# lowest PTX ISA version that LLVM 22 accepts for each architecture (a lower +ptxNN exits the process)
ARCH_MIN_PTX = {
    60: 50, 61: 50, 62: 50, 70: 60, 72: 61, 75: 63, 80: 70, 86: 71, 87: 74, 89: 78, 90: 78,
    100: 86, 101: 86, 103: 88, 110: 90, 120: 87, 121: 88,
}  # fmt: skip


def min_ptx_for_arch(target: Target) -> int:
    sm = target.sm
    base = ARCH_MIN_PTX.get(sm)
    if base is None:
        base = max(v for k, v in ARCH_MIN_PTX.items() if k <= sm)
    if target.arch_specific and sm == 90:
        base = max(base, 80)
    return base


_SREG = {"thread_id": "tid", "block_id": "ctaid", "block_dim": "ntid", "grid_dim": "nctaid"}
_SHFL = {"xor": "bfly", "up": "up", "down": "down", "idx": "idx"}
_FENCE = {"cta": 'syncscope("block") ', "gpu": 'syncscope("device") ', "sys": ""}
_FP8_NAME = {"f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}
_LOAD_HINTS = ("ca", "cg", "cs", "lu", "cv")
_STORE_HINTS = ("wb", "cg", "cs", "wt")


class NVPTXHooks(TargetHooks):
    """Target hooks for NVIDIA GPUs through LLVM's NVPTX back end."""

    triple = "nvptx64-nvidia-cuda"
    datalayout = NVPTX_DATALAYOUT
    const_addrspace = 4

    def __init__(self, target: Target):
        super().__init__(target)
        self.me = None
        self._libdevice: str | None = None
        self._libdevice_found = False

    def begin_module(self, me) -> None:
        self.me = me

    def libdevice_path(self) -> str | None:
        if not self._libdevice_found:
            self._libdevice = None if self.target.math == "approx" else find_libdevice(self.target.libdevice)
            self._libdevice_found = True
        return self._libdevice

    # -- capabilities ---------------------------------------------------------------------------
    # the table is flydsl.dialects.capabilities' (the front end checks the same table while tracing)
    def supports(self, feature: str) -> bool:
        return capability_gap(feature, self.target.arch) is None

    def require(self, op, feature: str) -> None:
        gap = capability_gap(feature, self.target.arch)
        if gap is not None:
            raise CodegenError(gap.message, op=op, fix=gap.fix)
        if self.me is not None:
            self.me.need_ptx(min_ptx(feature, self.target.sm), CAPABILITIES[feature].what)

    # -- functions ------------------------------------------------------------------------------
    def function_attributes(self, me, fn_op, is_kernel: bool) -> tuple[str, list[str]]:
        attrs: list[str] = []
        if not is_kernel:
            return "", attrs
        kbs = fn_op.attrs.get("known_block_size")
        if kbs:
            attrs.append(f'"nvvm.reqntid"="{",".join(str(int(x)) for x in kbs)}"')
        maxreg = fn_op.attrs.get("max_registers") or self.target.maxnreg
        if maxreg:
            attrs.append(f'"nvvm.maxnreg"="{int(maxreg)}"')
        minb = fn_op.attrs.get("min_blocks_per_sm")
        if not maxreg and not minb and _uses_setmaxnreg(fn_op):
            # NOTE: setmaxnreg takes effect only with a register bound at entry (else ptxas ignores it,
            # warning C7508); one block per SM is what a warp-specialized kernel is written for
            minb = 1
        if minb:
            attrs.append(f'"nvvm.minctasm"="{int(minb)}"')
        cl = fn_op.attrs.get("cluster_dims")
        if cl:
            self.require(fn_op, "cluster")
            attrs.append(f'"nvvm.cluster_dim"="{",".join(str(int(x)) for x in cl)}"')
        return "ptx_kernel", attrs

    # -- special registers, barriers, fences ----------------------------------------------------
    def special_register(self, fe, op, kind: str, dim: str) -> str:
        if kind == "lane_id":
            return fe.call("llvm.nvvm.read.ptx.sreg.laneid", "i32", [])
        if kind == "block_dim" and fe.fn.attrs.get("kernel"):
            kbs = fe.fn.attrs.get("known_block_size")
            if kbs:
                return str(int(kbs["xyz".index(dim)]))
        return fe.call(f"llvm.nvvm.read.ptx.sreg.{_SREG[kind]}.{dim}", "i32", [])

    def barrier(self, fe, op) -> None:
        fe.call("llvm.nvvm.barrier.cta.sync.aligned.all", "void", [("i32", "0")])

    def fence(self, fe, op, scope: str) -> None:
        if scope not in _FENCE:
            raise CodegenError(f"unknown fence scope {scope!r}")
        self.require(op, "scoped_atomics")
        fe.emit(f"fence {_FENCE[scope]}seq_cst")

    # -- warp operations ------------------------------------------------------------------------
    def _shfl32(self, fe, mode: str, value: str, ty: str, offset: str, c: str) -> str:
        suffix = "f32" if ty == "float" else "i32"
        args = [("i32", "-1"), (ty, value), ("i32", offset), ("i32", c)]
        return fe.call(f"llvm.nvvm.shfl.sync.{mode}.{suffix}", ty, args)

    def shuffle(self, fe, op) -> None:
        """``shfl.sync`` on the full warp; values other than 32 bits are split or widened."""
        v, off, width = op.operands
        mode = _SHFL[op.attrs["mode"]]
        t = v.type
        ty = llvm_type(t)
        w = fe.val(width)
        # the CUDA `c` operand: segment mask in bits 8-12, clamp lane in bits 0-4 (0 for `up`)
        wc = constant_int(width)
        if wc is not None:
            cval = (32 - wc) << 8 | (0 if mode == "up" else 31)
            c = str(cval)
        else:
            seg = fe.assign(f"shl i32 {fe.assign(f'sub i32 32, {w}')}, 8")
            c = seg if mode == "up" else fe.assign(f"or i32 {seg}, 31")
        o = fe.val(off)
        if ty in ("float", "i32"):
            fe.define(op.results[0], self._shfl32(fe, mode, fe.val(v), ty, o, c))
            return
        bits = 64 if isinstance(t, PointerType) else t.bitwidth
        ity = f"i{bits}"
        if isinstance(t, PointerType):
            x = fe.assign(f"ptrtoint {ty} {fe.val(v)} to i64")
        else:
            x = fe.cast("bitcast", fe.val(v), ty, ity)
        if bits < 32:
            wide = fe.assign(f"zext {ity} {x} to i32")
            r = fe.assign(f"trunc i32 {self._shfl32(fe, mode, wide, 'i32', o, c)} to {ity}")
        elif bits == 64:
            pair = fe.assign(f"bitcast i64 {x} to <2 x i32>")
            lo = self._shfl32(fe, mode, fe.assign(f"extractelement <2 x i32> {pair}, i64 0"), "i32", o, c)
            hi = self._shfl32(fe, mode, fe.assign(f"extractelement <2 x i32> {pair}, i64 1"), "i32", o, c)
            p0 = fe.assign(f"insertelement <2 x i32> poison, i32 {lo}, i64 0")
            r = fe.assign(f"bitcast <2 x i32> {fe.assign(f'insertelement <2 x i32> {p0}, i32 {hi}, i64 1')} to i64")
        elif bits == 32:
            r = self._shfl32(fe, mode, x, "i32", o, c)
        else:
            raise CodegenError(f"cannot shuffle a {bits}-bit value ({t})", op=op, fix="split it into 32-bit parts")
        if isinstance(t, PointerType):
            fe.define(op.results[0], fe.assign(f"inttoptr i64 {r} to {ty}"))
        else:
            fe.define(op.results[0], fe.cast("bitcast", r, ity, ty))

    def vote(self, fe, op) -> None:
        mode = op.attrs["mode"]
        ret = "i32" if mode == "ballot" else "i1"
        r = fe.call(f"llvm.nvvm.vote.{mode}.sync", ret, [("i32", "-1"), ("i1", fe.val(op.operands[0]))])
        fe.define(op.results[0], r)

    def printf(self, fe, op) -> None:
        emit_printf(self, fe, op)

    # -- math -----------------------------------------------------------------------------------
    def math(self, fe, op, fn: str, args: list[str], llty: str) -> str:
        return lower_math(self, fe, op, fn, args, llty)

    # -- fp8 ------------------------------------------------------------------------------------
    def _fp8_kind(self, op, t) -> str:
        e = t.element_type
        k = _FP8_NAME.get(e.name)
        if k is None:
            raise CodegenError(
                f"{e.name} is an AMD (fnuz) fp8 format with no conversion instruction on NVIDIA GPUs",
                op=op,
                fix="use f8E4M3FN or f8E5M2 on NVIDIA targets",
            )
        return k

    def convert_fp8(self, fe, op, value: str, src, dst) -> str:
        """fp8 ↔ float. Widening is exact (through f16); narrowing rounds once to nearest even
        from f16/f32 and saturates to the largest finite value (``satfinite``); f64 and bf16
        sources are rounded to f32 first."""
        self.require(op, "fp8")
        n, _ = vector_parts(src)
        if is_fp8(src):
            kind = self._fp8_kind(op, src)
            h = self._fp8_to_f16(fe, value, kind, n)
            f16 = _like(src, FloatType("f16"))
            if is_fp8(dst):
                return self._f16_to_fp8(fe, op, h, self._fp8_kind(op, dst), n)
            return _float_cast(fe, h, f16, dst)
        kind = self._fp8_kind(op, dst)
        se = src.element_type
        if se.name == "f16":
            return self._f16_to_fp8(fe, op, value, kind, n)
        f32 = _like(src, FloatType("f32"))
        if se.name == "f64":  # round to odd first: the second rounding is then correct
            x = f64_to_f32_round_odd(fe, value, src)
        else:
            x = _float_cast(fe, value, src, f32) if se.name != "f32" else value
        return self._f32_to_fp8(fe, x, kind, n)

    def _pairs(self, fe, value: str, n: int, ety: str) -> list[str]:
        """Split a vector of n lanes into <2 x ety> pairs (odd n: the last pair's lane 1 is zero)."""
        vty = f"<{n} x {ety}>"
        out = []
        for i in range(0, n, 2):
            if i + 1 < n:
                pair = f"shufflevector {vty} {value}, {vty} poison, <2 x i32> <i32 {i}, i32 {i + 1}>"
            else:  # lane n of the concatenation is lane 0 of the zero vector
                pair = f"shufflevector {vty} {value}, {vty} zeroinitializer, <2 x i32> <i32 {i}, i32 {n}>"
            out.append(fe.assign(pair))
        return out

    def _join(self, fe, parts: list[str], n: int, ety: str) -> str:
        """Concatenate <2 x ety> pairs into <n x ety>."""
        acc = "poison"
        vty = f"<{n} x {ety}>"
        for k, p in enumerate(parts):
            for lane in range(2):
                i = 2 * k + lane
                if i >= n:
                    break
                x = fe.assign(f"extractelement <2 x {ety}> {p}, i64 {lane}")
                acc = fe.assign(f"insertelement {vty} {acc}, {ety} {x}, i64 {i}")
        return acc

    def _fp8_to_f16(self, fe, value: str, kind: str, n: int) -> str:
        name = f"llvm.nvvm.{kind}x2.to.f16x2.rn"
        if not n:
            h2 = fe.call(name, "<2 x half>", [("i16", fe.assign(f"zext i8 {value} to i16"))])
            return fe.assign(f"extractelement <2 x half> {h2}, i64 0")
        parts = []
        for pr in self._pairs(fe, value, n, "i8"):
            parts.append(fe.call(name, "<2 x half>", [("i16", fe.assign(f"bitcast <2 x i8> {pr} to i16"))]))
        return self._join(fe, parts, n, "half")

    def _f16_to_fp8(self, fe, op, value: str, kind: str, n: int) -> str:
        name = f"llvm.nvvm.f16x2.to.{kind}x2.rn"
        if not n:
            h2 = fe.assign(f"insertelement <2 x half> zeroinitializer, half {value}, i64 0")
            return fe.assign(f"trunc i16 {fe.call(name, 'i16', [('<2 x half>', h2)])} to i8")
        parts = [
            fe.assign(f"bitcast i16 {fe.call(name, 'i16', [('<2 x half>', pr)])} to <2 x i8>")
            for pr in self._pairs(fe, value, n, "half")
        ]
        return self._join(fe, parts, n, "i8")

    def _f32_to_fp8(self, fe, value: str, kind: str, n: int) -> str:
        # cvt d, a, b puts a in the upper byte and b in the lower one: pass (lane 1, lane 0)
        name = f"llvm.nvvm.ff.to.{kind}x2.rn"
        if not n:
            return fe.assign(f"trunc i16 {fe.call(name, 'i16', [('float', '0.0'), ('float', value)])} to i8")
        parts = []
        for pr in self._pairs(fe, value, n, "float"):
            lo = fe.assign(f"extractelement <2 x float> {pr}, i64 0")
            hi = fe.assign(f"extractelement <2 x float> {pr}, i64 1")
            parts.append(fe.assign(f"bitcast i16 {fe.call(name, 'i16', [('float', hi), ('float', lo)])} to <2 x i8>"))
        return self._join(fe, parts, n, "i8")

    # -- cache hints ----------------------------------------------------------------------------
    def _hinted_words(self, op, t, space: int, cache: str, hints) -> tuple[int, str, str, str] | None:
        """(count, PTX type, constraint, LLVM type) of the registers that move a value of type ``t`` in a
        cache-hinted access; None when the hint does not apply: not global memory, ``cache`` not in
        ``hints``, a size other than 2/4/8/16 bytes, or an access of more than 2 bytes that is not
        aligned to its size."""
        nbytes = store_size(t)
        align = op.attrs.get("align") or 0
        if space != 1 or cache not in hints or (nbytes > 2 and align < nbytes):
            return None
        if nbytes in (4, 8, 16):
            return nbytes // 4, "b32", "r", "i32"
        if nbytes == 2:
            return 1, "b16", "h", "i16"
        return None

    def cached_load(self, fe, op, ptr: str, llty: str, space: int, cache: str) -> str | None:
        """``ld.global.<cache>`` through inline PTX (global memory, aligned accesses of 2-16 bytes)."""
        words = self._hinted_words(op, op.results[0].type, space, cache, _LOAD_HINTS)
        if words is None:
            return None
        k, pty, con, wty = words
        regs = ", ".join(f"${i}" for i in range(k))
        vec = f".v{k}" if k > 1 else ""
        asm = f"ld.global.{cache}{vec}.{pty} {{{regs}}}, [${k}];" if k > 1 else f"ld.global.{cache}.{pty} $0, [$1];"
        cons = ",".join([f"={con}"] * k + ["l", "~{memory}"])
        rty = "{ " + ", ".join([wty] * k) + " }" if k > 1 else wty
        r = fe.assign(f'call {rty} asm sideeffect "{asm}", "{cons}"(ptr addrspace(1) {ptr})')
        if k > 1:
            acc = "poison"
            for i in range(k):
                x = fe.assign(f"extractvalue {rty} {r}, {i}")
                acc = fe.assign(f"insertelement <{k} x {wty}> {acc}, {wty} {x}, i64 {i}")
            return fe.cast("bitcast", acc, f"<{k} x {wty}>", llty)
        return fe.cast("bitcast", r, wty, llty)

    def cached_store(self, fe, op, value: str, ptr: str, llty: str, space: int, cache: str) -> bool:
        words = self._hinted_words(op, op.operands[0].type, space, cache, _STORE_HINTS)
        if words is None:
            return False
        k, pty, con, wty = words
        if k > 1:
            vec = fe.cast("bitcast", value, llty, f"<{k} x {wty}>")
            regs = [fe.assign(f"extractelement <{k} x {wty}> {vec}, i64 {i}") for i in range(k)]
            asm = f"st.global.{cache}.v{k}.{pty} [$0], {{{', '.join(f'${i + 1}' for i in range(k))}}};"
        else:
            regs = [fe.cast("bitcast", value, llty, wty)]
            asm = f"st.global.{cache}.{pty} [$0], $1;"
        cons = ",".join(["l"] + [con] * k + ["~{memory}"])
        args = ", ".join([f"ptr addrspace(1) {ptr}"] + [f"{wty} {r}" for r in regs])
        fe.emit(f'call void asm sideeffect "{asm}", "{cons}"({args})')
        return True


def _uses_setmaxnreg(fn_op) -> bool:
    return any(o.defn.name == "nvvm.setmaxnreg" for o in fn_op.walk())


def _like(t, elem):
    n, _ = vector_parts(t)
    return VectorType(n, elem) if n else elem


def _float_cast(fe, value: str, src, dst) -> str:
    sw, dw = src.element_type.bitwidth, dst.element_type.bitwidth
    sty, dty = llvm_type(src), llvm_type(dst)
    if sty == dty:
        return value
    if sw == dw:  # f16 <-> bf16 through f32
        mid = llvm_type(_like(src, FloatType("f32")))
        return fe.assign(f"fptrunc {mid} {fe.assign(f'fpext {sty} {value} to {mid}')} to {dty}")
    return fe.assign(f"{'fpext' if dw > sw else 'fptrunc'} {sty} {value} to {dty}")
