"""A compiled specialization: everything needed to launch it, in memory or as a disk-cache entry.

The module (host ``func.func`` + ``gpu.module`` kernels) is kept as IR; on disk it is MLIR text in
generic form with source locations (so interpreter faults still name the user's line in another
process), parsed back with :func:`flydsl.ir.parse_module`. Device code (PTX, optional cubin) and the
names of parameters (for messages) complete it. Launching never needs the Python source again.

A disk entry also holds the host function's text on its own. A loaded artifact parses only that (a few
ops) until something asks for the kernels' IR — the interpreter, or code generation of an entry without
device code: the GPU launches from the PTX/cubin and the host function alone, so a cached start does not
parse the kernel bodies (thousands of ops for an unrolled GEMM: most of its time, issue 11).
"""

from __future__ import annotations

import base64
from dataclasses import replace

from ..codegen.kernel_info import KernelInfo
from ..ir import Op, parse_module, print_op

__all__ = ["Artifact"]


class Artifact:
    __slots__ = ("name", "_module", "_text", "_host", "host_name", "kernels", "param_names", "ptx", "cubin",
                 "target", "_ops", "traced_ir", "__weakref__")  # fmt: skip

    def __init__(
        self,
        name: str,
        module: Op | None,
        host_name: str,
        kernels: dict[str, KernelInfo],
        param_names: list,
        target: str,
        *,
        text: str | None = None,
        host_text: str | None = None,
    ):
        self.name = name
        self._module = module  # None: parsed from ``text`` on first use
        self._text = text
        self._host = parse_module(host_text) if module is None and host_text else None
        self.host_name = host_name
        self.kernels = kernels  # kernel name -> its KernelInfo (params filled once device code exists)
        self.param_names = param_names  # names of the host function's parameters
        self.ptx: str | None = None
        self.cubin: bytes | None = None
        self.target = target
        self._ops: dict | None = None
        self.traced_ir: str | None = None  # the module's text before the passes

    @property
    def module(self) -> Op:
        """The whole module (parsed from the disk entry's text on first use)."""
        if self._module is None:
            self._module = parse_module(self._text)
            self._text = None
        return self._module

    def _index(self) -> dict:
        if self._ops is None:
            ops = {}
            for o in self.module.walk():
                if o.defn.name in ("func.func", "gpu.func"):
                    ops[str(o.attrs["sym_name"])] = o
            self._ops = ops
        return self._ops

    def host_op(self) -> Op:
        if self._module is None and self._host is not None:
            return self._host
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
            "ir": self._text if self._module is None else print_op(self.module, locs=True, generic=True),
            "host": self.host_name,
            "host_ir": print_op(self.host_op(), locs=True, generic=True),
            "kernels": {n: k.to_dict() for n, k in self.kernels.items()},
            "param_names": self.param_names,
            "target": self.target,
            "ptx": self.ptx,
            "cubin": base64.b64encode(self.cubin).decode() if self.cubin else None,
            "source_ir": self.traced_ir,
        }

    @classmethod
    def from_body(cls, body: dict, lazy: bool = False) -> Artifact:
        """The artifact of a disk entry; ``lazy``: parse the host function now and the rest on first use
        (else all of it now: text that does not parse raises here)."""
        kernels = {n: KernelInfo.from_dict(k) for n, k in body["kernels"].items()}
        if lazy and body.get("host_ir"):
            art = cls(body["name"], None, body["host"], kernels, body["param_names"], body["target"],
                      text=body["ir"], host_text=body["host_ir"])  # fmt: skip
        else:
            art = cls(body["name"], parse_module(body["ir"]), body["host"], kernels, body["param_names"],
                      body["target"])  # fmt: skip
        art.ptx = body.get("ptx")
        art.traced_ir = body.get("source_ir")
        cub = body.get("cubin")
        art.cubin = base64.b64decode(cub) if cub else None
        return art
