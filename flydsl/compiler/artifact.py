"""A compiled specialization: everything needed to launch it, in memory or as a disk-cache entry.

The module (host ``func.func`` + ``gpu.module`` kernels) is kept as IR; on disk it is MLIR text in
generic form with source locations (so interpreter faults still name the user's line in another
process), parsed back with :func:`flydsl.ir.parse_module`. Device code (PTX, optional cubin) and the
names of parameters (for messages) complete it. Launching never needs the Python source again.
"""

from __future__ import annotations

import base64
from dataclasses import replace

from ..codegen.kernel_info import KernelInfo
from ..ir import Op, parse_module, print_op

__all__ = ["Artifact"]


class Artifact:
    __slots__ = (
        "name", "module", "host_name", "kernels", "param_names", "ptx", "cubin", "target", "_ops", "traced_ir",
    )  # fmt: skip

    def __init__(
        self, name: str, module: Op, host_name: str, kernels: dict[str, KernelInfo], param_names: list, target: str
    ):
        self.name = name
        self.module = module
        self.host_name = host_name
        self.kernels = kernels  # kernel name -> its KernelInfo (params filled once device code exists)
        self.param_names = param_names  # names of the host function's parameters
        self.ptx: str | None = None
        self.cubin: bytes | None = None
        self.target = target
        self._ops: dict | None = None
        self.traced_ir: str | None = None  # the module's text before the passes

    def _index(self) -> dict:
        if self._ops is None:
            ops = {}
            for o in self.module.walk():
                if o.defn.name in ("func.func", "gpu.func"):
                    ops[str(o.attrs["sym_name"])] = o
            self._ops = ops
        return self._ops

    def host_op(self) -> Op:
        return self._index()[self.host_name]

    def kernel_op(self, name: str) -> Op:
        return self._index()[name]

    def set_device_code(self, ptx: str | None, cubin: bytes | None, kernels: dict[str, KernelInfo]) -> None:
        """The device code and each kernel's metadata from the code generator (the user's parameter names
        are kept)."""
        self.ptx, self.cubin = ptx, cubin
        for name, info in kernels.items():
            old = self.kernels.get(name)
            self.kernels[name] = replace(info, arg_names=old.arg_names) if old is not None else info

    def ir_text(self) -> str:
        return print_op(self.module, locs=True)

    @property
    def source_ir(self) -> str:
        """FlyDSL's name: the module's MLIR text as traced, before the passes (locations left out); the
        compiled module's text for a disk-cache entry written without it."""
        return self.traced_ir if self.traced_ir is not None else print_op(self.module)

    @property
    def ir(self) -> str:
        return print_op(self.module)

    def to_body(self) -> dict:
        """The JSON body of a disk-cache entry."""
        return {
            "name": self.name,
            "ir": print_op(self.module, locs=True, generic=True),
            "host": self.host_name,
            "kernels": {n: k.to_dict() for n, k in self.kernels.items()},
            "param_names": self.param_names,
            "target": self.target,
            "ptx": self.ptx,
            "cubin": base64.b64encode(self.cubin).decode() if self.cubin else None,
            "source_ir": self.traced_ir,
        }

    @classmethod
    def from_body(cls, body: dict) -> Artifact:
        kernels = {n: KernelInfo.from_dict(k) for n, k in body["kernels"].items()}
        art = cls(body["name"], parse_module(body["ir"]), body["host"], kernels, body["param_names"], body["target"])
        art.ptx = body.get("ptx")
        art.traced_ir = body.get("source_ir")
        cub = body.get("cubin")
        art.cubin = base64.b64decode(cub) if cub else None
        return art
