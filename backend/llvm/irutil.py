"""Small helpers over llvmlite.ir shared by the LLVM codegen modules.

All pointers are opaque (``ptr``): llvmlite's IR layer still makes typed
pointers for allocas and globals, which its builder then type-checks against
the opaque pointers everything else uses, so :func:`alloca` hands back an
opaque one.
"""

from __future__ import annotations

from llvmlite import ir

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()


def c64(v):
    return ir.Constant(I64, v)


def declare(module, name, ret, args):
    """The function `name` in `module`, declared on first use."""
    f = module.globals.get(name)
    if f is None:
        f = ir.Function(module, ir.FunctionType(ret, args), name)
    return f


def alloca(builder, ty, size=None, align=None, name=""):
    a = builder.alloca(ty, size=size, name=name)
    a.type = PTR
    if align:
        a.align = align
    return a


def cstring(module, name, text):
    """A private constant NUL-terminated string."""
    data = bytearray(text.encode() + b"\0")
    ty = ir.ArrayType(I8, len(data))
    g = ir.GlobalVariable(module, ty, name)
    g.linkage = "private"
    g.global_constant = True
    g.initializer = ir.Constant(ty, data)
    g.unnamed_addr = True
    return g


class TypedCallee:
    """Lets llvmlite's builder.call emit an indirect call through an opaque
    pointer: the call reads `.function_type` and prints the pointer."""

    def __init__(self, ptr, fnty):
        self.ptr = ptr
        self.function_type = fnty
        self.type = PTR

    def get_reference(self):
        return self.ptr.get_reference()

    def __str__(self):
        return str(self.ptr)


class _LoopID(ir.values.MDValue):
    """``!N = distinct !{!N, props...}``: a loop ID must refer to itself,
    which llvmlite's uniqued metadata cannot express."""

    def descr(self, buf):
        ops = [self.get_reference()] + [op.get_reference() for op in self.operands]
        buf += ("distinct !{{ {0} }}".format(", ".join(ops)), "\n")

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)


def loop_metadata(module, props):
    """A loop ID node for `props`: [("llvm.loop.unroll.full",),
    ("llvm.loop.vectorize.width", 8), ...]."""
    nodes = []
    for p in props:
        ops = [ir.MetaDataString(module, p[0])]
        for v in p[1:]:
            ops.append(ir.Constant(I1, v) if isinstance(v, bool) else ir.Constant(I32, v))
        nodes.append(module.add_metadata(ops))
    return _LoopID(module, nodes, name=str(len(module.metadata)))


class BFloatType(ir.types._BaseFloatType):
    """LLVM's ``bfloat`` (llvmlite has no such type); constants print as
    ``0xRXXXX``, the bf16 bits rounded to nearest even."""

    null = "0.0"
    intrinsic_name = "bf16"

    def __str__(self):
        return "bfloat"

    def format_constant(self, value):
        import math
        import struct
        if math.isnan(value):
            return "0xR7FC0"
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        bits += 0x7FFF + ((bits >> 16) & 1)
        return f"0xR{(bits >> 16) & 0xFFFF:04X}"


BFloatType._create_instance()
