"""IR types: interned, immutable, compared by identity.

Every type prints in MLIR syntax (``i32``, ``f32``, ``vector<4xf32>``, ``!fly.ptr<f32, global>``).
Constructing the same type twice returns the same object, so ``is``/``==``/``hash`` are cheap and
types can be dictionary keys.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = [
    "Type",
    "IntegerType",
    "IndexType",
    "FloatType",
    "VectorType",
    "PointerType",
    "BufferRsrcType",
    "TmaDescType",
    "FlyType",
    "FunctionType",
    "AddressSpace",
    "i1",
    "i8",
    "i16",
    "i32",
    "i64",
    "index",
    "f16",
    "bf16",
    "f32",
    "f64",
    "f8E4M3FN",
    "f8E5M2",
    "f8E4M3FNUZ",
    "f8E5M2FNUZ",
    "FLOAT_KINDS",
    "parse_type",
]


_T = TypeVar("_T", bound="Type")


class Type:
    """Base class of all IR types. Subclasses are interned: build them through their constructor."""

    __slots__ = ("_str",)
    _str: str

    @classmethod
    def of(cls: type[_T], v) -> _T:
        """The type of ``v`` (a Value, or a type) as this class: ``VectorType.of(op.operands[0])`` where the
        op's verifier guarantees a vector.

        Raises:
            TypeError: the type is of another class.
        """
        t = getattr(v, "type", v)
        if not isinstance(t, cls):
            raise TypeError(f"expected a {cls.__name__}, got {t}")
        return t

    is_integer = False  # signless integer iN (not index)
    is_index = False
    is_float = False
    is_vector = False
    is_pointer = False
    is_int_like = False  # integer or index

    def __str__(self) -> str:
        return self._str

    def __repr__(self) -> str:
        return f"Type({self._str})"

    def __reduce__(self):
        return (parse_type, (self._str,))

    def __call__(self) -> Type:
        """A type called with no arguments is itself: FlyDSL code spells types both ``T.f32`` and ``T.f32()``."""
        return self

    @property
    def element_type(self) -> Type:
        """The scalar type of a vector, else the type itself."""
        return self

    @property
    def bitwidth(self) -> int:
        raise TypeError(f"type {self} has no bit width")


class IntegerType(Type):
    """Signless integer ``iN``. Signedness is a property of ops (divsi/divui), not of the type."""

    __slots__ = ("width",)
    width: int
    is_integer = True
    is_int_like = True
    _cache: dict[int, IntegerType] = {}

    def __new__(cls, width: int):
        t = cls._cache.get(width)
        if t is None:
            if not isinstance(width, int) or width <= 0:
                raise ValueError(f"integer width must be a positive int, got {width!r}")
            t = object.__new__(cls)
            t.width = width
            t._str = f"i{width}"
            cls._cache[width] = t
        return t

    @property
    def bitwidth(self) -> int:
        return self.width


class IndexType(Type):
    """MLIR ``index``: a 64-bit integer on every target here."""

    __slots__ = ()
    is_index = True
    is_int_like = True
    _inst: IndexType | None = None
    width = 64

    def __new__(cls):
        if cls._inst is None:
            t = object.__new__(cls)
            t._str = "index"
            cls._inst = t
        return cls._inst

    @property
    def bitwidth(self) -> int:
        return 64


# name -> (bit width, mantissa bits, is fnuz)
FLOAT_KINDS: dict[str, tuple[int, int]] = {
    "f16": (16, 10),
    "bf16": (16, 7),
    "f32": (32, 23),
    "f64": (64, 52),
    "tf32": (32, 10),
    "f8E4M3FN": (8, 3),
    "f8E5M2": (8, 2),
    "f8E4M3FNUZ": (8, 3),
    "f8E5M2FNUZ": (8, 2),
}


class FloatType(Type):
    """A floating-point type by its MLIR name (``f16``, ``bf16``, ``f32``, ``f64``, ``f8E4M3FN`` …)."""

    __slots__ = ("name", "width", "mantissa")
    name: str
    width: int
    mantissa: int
    is_float = True
    _cache: dict[str, FloatType] = {}

    def __new__(cls, name: str):
        t = cls._cache.get(name)
        if t is None:
            if name not in FLOAT_KINDS:
                raise ValueError(f"unknown float type {name!r}; known: {', '.join(FLOAT_KINDS)}")
            t = object.__new__(cls)
            t.name = name
            t.width, t.mantissa = FLOAT_KINDS[name]
            t._str = name
            cls._cache[name] = t
        return t

    @property
    def bitwidth(self) -> int:
        return self.width

    @property
    def is_fp8(self) -> bool:
        return self.width == 8


class VectorType(Type):
    """``vector<NxT>`` (or n-D ``vector<2x4xT>``) of a scalar integer, index or float type."""

    __slots__ = ("shape", "elem", "numel")
    shape: tuple[int, ...]
    elem: Type
    numel: int
    is_vector = True
    _cache: dict[tuple, VectorType] = {}

    def __new__(cls, shape, elem: Type):
        if isinstance(shape, int):
            shape = (shape,)
        else:
            shape = tuple(shape)
        key = (shape, elem)
        t = cls._cache.get(key)
        if t is None:
            if not shape or any(not isinstance(d, int) or d <= 0 for d in shape):
                raise ValueError(f"vector shape must be positive ints, got {shape!r}")
            if not (elem.is_float or elem.is_int_like):
                raise ValueError(f"vector element must be an integer or float type, got {elem}")
            t = object.__new__(cls)
            t.shape = shape
            t.elem = elem
            n = 1
            for d in shape:
                n *= d
            t.numel = n
            t._str = f"vector<{'x'.join(map(str, shape))}x{elem}>"
            cls._cache[key] = t
        return t

    @property
    def element_type(self) -> Type:
        return self.elem

    @property
    def bitwidth(self) -> int:
        return self.numel * self.elem.bitwidth


class AddressSpace:
    """Address spaces, numbered as NVPTX/AMDGPU LLVM address spaces."""

    GENERIC = 0
    GLOBAL = 1
    SHARED = 3
    CONSTANT = 4
    LOCAL = 5
    # another block's shared memory in the thread block cluster (PTX ``shared::cluster``; sm_90): made by
    # ``nvvm.mapa`` from a shared pointer and a block rank
    SHARED_CLUSTER = 7
    NAMES = {0: "generic", 1: "global", 3: "shared", 4: "constant", 5: "local", 7: "shared_cluster"}
    BY_NAME = {v: k for k, v in NAMES.items()}


class PointerType(Type):
    """Typed pointer ``!fly.ptr<T, space>``: ``T`` is the pointee element type, ``space`` an address space."""

    __slots__ = ("elem", "space")
    elem: Type
    space: int
    is_pointer = True
    _cache: dict[tuple, PointerType] = {}

    def __new__(cls, elem: Type, space: int | str = AddressSpace.GLOBAL):
        if isinstance(space, str):
            space = AddressSpace.BY_NAME[space]
        key = (elem, space)
        t = cls._cache.get(key)
        if t is None:
            if space not in AddressSpace.NAMES:
                raise ValueError(f"unknown address space {space!r}")
            t = object.__new__(cls)
            t.elem = elem
            t.space = space
            t._str = f"!fly.ptr<{elem}, {AddressSpace.NAMES[space]}>"
            cls._cache[key] = t
        return t

    @property
    def bitwidth(self) -> int:
        return 64

    @property
    def space_name(self) -> str:
        return AddressSpace.NAMES[self.space]


class BufferRsrcType(Type):
    """``!fly.buffer_rsrc``: a global base pointer with a byte bound (AMD buffer-descriptor semantics)."""

    __slots__ = ()
    _inst: BufferRsrcType | None = None

    def __new__(cls):
        if cls._inst is None:
            t = object.__new__(cls)
            t._str = "!fly.buffer_rsrc"
            cls._inst = t
        return cls._inst


class TmaDescType(Type):
    """``!fly.tma_desc``: a 128-byte TMA tensor-map descriptor, made on the host and passed to a kernel
    by value as a grid-constant parameter (Hopper ``cp.async.bulk.tensor``; see flydsl/runtime/tma.py)."""

    __slots__ = ()
    _inst: TmaDescType | None = None
    nbytes = 128
    align = 64

    def __new__(cls):
        if cls._inst is None:
            t = object.__new__(cls)
            t._str = "!fly.tma_desc"
            cls._inst = t
        return cls._inst


class FlyType(Type):
    """A value type of FlyDSL's ``fly`` dialect, ``!fly.<mnemonic><<body>>``: ``!fly.int_tuple<(9,(4,8))>``,
    ``!fly.layout<(4,8):(1,4)>``, ``!fly.memref<f32, register, 8:1>``, ``!fly.tile<[4:1|8:1]>``.

    The body is the static part of the value in CuTe notation (``?`` for a run-time leaf). The IR treats it
    as opaque text; the layout algebra that reads and writes it lives above the IR (flydsl/layout/types.py).
    Values of these types exist only between tracing and the ``fly-layout-lowering`` pass, which folds them
    away (docs/layout.md, "Layouts in the IR")."""

    __slots__ = ("mnemonic", "body")
    mnemonic: str
    body: str
    MNEMONICS = ("int_tuple", "layout", "composed_layout", "memref", "tile", "coord_tensor")
    _cache: dict[tuple, FlyType] = {}

    def __new__(cls, mnemonic: str, body: str):
        key = (mnemonic, body)
        t = cls._cache.get(key)
        if t is None:
            if mnemonic not in cls.MNEMONICS:
                raise ValueError(f"unknown fly type !fly.{mnemonic}; known: {', '.join(cls.MNEMONICS)}")
            t = object.__new__(cls)
            t.mnemonic = mnemonic
            t.body = body
            t._str = f"!fly.{mnemonic}<{body}>"
            cls._cache[key] = t
        return t

    @property
    def is_static(self) -> bool:
        """No run-time leaf (no ``?`` in the body)."""
        return "?" not in self.body


class FunctionType(Type):
    """``(inputs) -> (results)``."""

    __slots__ = ("inputs", "results")
    inputs: tuple[Type, ...]
    results: tuple[Type, ...]
    _cache: dict[tuple, FunctionType] = {}

    def __new__(cls, inputs, results=()):
        key = (tuple(inputs), tuple(results))
        t = cls._cache.get(key)
        if t is None:
            t = object.__new__(cls)
            t.inputs, t.results = key
            res = ", ".join(map(str, t.results))
            t._str = f"({', '.join(map(str, t.inputs))}) -> ({res})"
            cls._cache[key] = t
        return t


i1 = IntegerType(1)
i8 = IntegerType(8)
i16 = IntegerType(16)
i32 = IntegerType(32)
i64 = IntegerType(64)
index = IndexType()
f16 = FloatType("f16")
bf16 = FloatType("bf16")
f32 = FloatType("f32")
f64 = FloatType("f64")
f8E4M3FN = FloatType("f8E4M3FN")
f8E5M2 = FloatType("f8E5M2")
f8E4M3FNUZ = FloatType("f8E4M3FNUZ")
f8E5M2FNUZ = FloatType("f8E5M2FNUZ")


def _split_top(s: str, sep: str = ",") -> list[str]:
    """Split at top-level separators (outside <> and ())."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in s:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail:
        out.append(tail)
    return out


_PARSE_CACHE: dict[str, Type] = {}


def parse_type(text: str) -> Type:
    """Parse the printed form of a type (the inverse of ``str(type)``)."""
    t = _PARSE_CACHE.get(text)
    if t is not None:
        return t
    s = text.strip()
    if s == "index":
        t = index
    elif s.startswith("i") and s[1:].isdigit():
        t = IntegerType(int(s[1:]))
    elif s in FLOAT_KINDS:
        t = FloatType(s)
    elif s.startswith("vector<") and s.endswith(">"):
        body = s[7:-1]
        parts = body.split("x")
        dims = []
        while parts and parts[0].isdigit():
            dims.append(int(parts.pop(0)))
        t = VectorType(tuple(dims), parse_type("x".join(parts)))
    elif s.startswith("!fly.ptr<") and s.endswith(">"):
        elem, space = _split_top(s[9:-1])
        t = PointerType(parse_type(elem), space)
    elif s.startswith("!fly.") and s.endswith(">") and s[5 : s.find("<")] in FlyType.MNEMONICS:
        k = s.find("<")
        t = FlyType(s[5:k], s[k + 1 : -1].replace(" ", "") if s[5:k] != "memref" else s[k + 1 : -1])
    elif s == "!fly.buffer_rsrc":
        t = BufferRsrcType()
    elif s == "!fly.tma_desc":
        t = TmaDescType()
    elif s.startswith("(") and "->" in s:
        depth, k = 0, 0
        while k < len(s):
            depth += s[k] in "(<"
            depth -= s[k] in ")>"
            if depth == 0:
                break
            k += 1
        ins = _split_top(s[1:k])
        rest = s[k + 1 :].strip()
        if not rest.startswith("->"):
            raise ValueError(f"cannot parse type {text!r}")
        rest = rest[2:].strip()
        if rest.startswith("(") and rest.endswith(")"):
            outs = _split_top(rest[1:-1])
        else:
            outs = [rest]
        t = FunctionType([parse_type(x) for x in ins], [parse_type(x) for x in outs])
    else:
        raise ValueError(f"cannot parse type {text!r}")
    _PARSE_CACHE[text] = t
    return t
