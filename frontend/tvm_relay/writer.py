"""The relay dialect as classic TVM's Relay text (version 0.0.5).

    relay.adt @List<A> {...}            type List[A] { Cons(A, List[A]), Nil }
    relay.func @f(...) attributes {primitive}
                                        def @f(...) -> R [Primitive=1] { ... }
    %v = op(%a) {k = v} : T             %v = op(%a, k=v) /* ty=T */;   (attributes that differ
                                        from the op's defaults; dtypes by TVM's names)
    constant (one element)              1f, 2i64, True ...
    constant (more)                     meta[relay.Constant][i], the array in #[metadata]
    call @f / call %f / constant @f     @f(...) / %f(...) / @f
    tuple / get_item                    (%a, %b) / %t.0
    if / fn / match / construct         if (%c) {...} else {...} / fn (...) {...} /
                                        match (%v) { Ctor(%a, _) => {...} } / Ctor(...)

The #[metadata] section is the JSON object graph TVM's SaveJSON writes: a
map from "relay.Constant" to an array of constant nodes, each naming its
array in "b64ndarrays" (TVM's NDArray serialisation, params.py).  A
``relay.loop`` has no counterpart in TVM's text and is refused.
"""

from __future__ import annotations

import base64
import json

import numpy as np

from ...ir import types as T
from ...ir.diagnostics import DiagnosticError
from .params import write_array

_SUFFIX = {"float32": "f", "float16": "f16", "float64": "f64", "int64": "i64", "int8": "i8", "int16": "i16",
           "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64"}


class TvmRelayExportError(DiagnosticError):
    """Relay dialect IR with no counterpart in TVM's text."""


def export_tvm_relay(module):
    """TVM Relay text of `module` (relay.adt and relay.func ops)."""
    return _Writer().module(module)


def tvm_type(t):
    if isinstance(t, T.TensorType):
        dt = T.tvm_dtype_name(t.element_type)
        if not t.shape:
            return dt
        return f"Tensor[({', '.join('?' if d is None else str(d) for d in t.shape)}), {dt}]"
    if isinstance(t, T.TupleType):
        return f"({', '.join(tvm_type(x) for x in t.types)}{',' if len(t.types) == 1 else ''})"
    if isinstance(t, T.FunctionType):
        return f"fn ({', '.join(tvm_type(x) for x in t.inputs)}) -> {tvm_type(t.results[0])}"
    from ...dialects.relay.types import ADTType, RefType, is_type_var
    if isinstance(t, RefType):
        return f"ref({tvm_type(t.value_type)})"
    if isinstance(t, ADTType):
        args = [tvm_type(a) for a in t.args]
        return t.adt + (f"[{', '.join(args)}]" if args else "")
    if is_type_var(t):
        return t.dialect_type
    raise TypeError(f"no TVM type for {t}")


class _Writer:
    def __init__(self):
        self.out = ['#[version = "0.0.5"]']
        self.arrays = []
        self.names = {}
        self.count = 0

    def module(self, module):
        for op in module.body.ops:
            if op.name == "relay.adt":
                self.adt(op)
        for op in module.body.ops:
            if op.name == "relay.func":
                self.func(op)
        text = "\n".join(self.out) + "\n"
        if self.arrays:
            text += "#[metadata]\n" + json.dumps(self.metadata(), indent=2) + "\n"
        return text

    def adt(self, op):
        a = op.attributes
        params = list(a.get("type_params", ()))
        ctors = []
        for name, fields in a["constructors"].items():
            ctors.append(name + (f"({', '.join(tvm_type(f) for f in fields)})" if fields else ""))
        self.out.append(f"type {a['sym_name']}" + (f"[{', '.join(params)}]" if params else "") + " {")
        self.out += [f"  {c}," for c in ctors]
        self.out.append("}")
        self.out.append("")

    def func(self, op):
        block = op.regions[0].blocks[0]
        self.names, self.count = {}, 0
        params = ", ".join(f"{self.name(a)}: {tvm_type(a.type)}" for a in block.args)
        ft = op.attributes["function_type"]
        ret = f" -> {tvm_type(ft.results[0])}" if len(ft.results) == 1 else \
            (f" -> ({', '.join(tvm_type(r) for r in ft.results)})" if ft.results else "")
        prim = " [Primitive=1]" if "primitive" in op.attributes else ""
        self.out.append(f"def @{op.attributes['sym_name']}({params}){ret}{prim} {{")
        self.block(block, 1)
        self.out.append("}")
        self.out.append("")

    def name(self, v):
        n = self.names.get(v)
        if n is None:
            n = self.names[v] = f"%{v.name}" if v.name and not v.name[0].isdigit() and "." not in v.name \
                else f"%{self.count}"
            if not (v.name and not v.name[0].isdigit()):
                self.count += 1
        return n

    def block(self, block, depth):
        ind = "  " * depth
        for op in block.ops:
            if op.name in ("relay.return", "relay.yield"):
                vals = [self.ref(v) for v in op.operands]
                self.out.append(ind + (vals[0] if len(vals) == 1 else f"({', '.join(vals)})"))
                return
            self.op(op, depth)

    def ref(self, v):
        d = v.defining_op()
        if d is not None and d.name == "relay.constant" and d.attributes["value"].array.size == 1 \
                and d.attributes["value"].array.ndim == 0:
            return self.scalar(d.attributes["value"].array)
        return self.name(v)

    def scalar(self, arr):
        x = arr.item()
        dt = arr.dtype.name
        if arr.dtype == bool:
            return "True" if x else "False"
        if dt == "int32":
            return str(x)
        if arr.dtype.kind == "f":
            text = repr(float(x))
            if text in ("inf", "-inf", "nan"):
                return None
            return text + _SUFFIX[dt]
        return f"{x}{_SUFFIX.get(dt, '')}"

    def op(self, op, depth):
        ind = "  " * depth
        name = op.name
        r = op.results[0] if op.results else None
        ty = f" /* ty={tvm_type(r.type)} */" if r is not None and r.type.is_complete else ""
        if name == "relay.constant":
            arr = op.attributes["value"].array
            if arr.ndim == 0 and self.scalar(arr) is not None:
                return   # written where it is used
            self.arrays.append(np.ascontiguousarray(arr))
            expr = f"meta[relay.Constant][{len(self.arrays) - 1}]"
        elif name == "relay.call":
            expr = f"@{op.attributes['callee'].name}({self.args(op)})"
        elif name == "relay.call_indirect":
            f, *args = op.operands
            expr = f"{self.ref(f)}({', '.join(self.ref(a) for a in args)})"
        elif name == "relay.func_ref":
            expr = f"@{op.attributes['callee'].name}"
        elif name == "relay.tuple":
            vals = [self.ref(v) for v in op.operands]
            expr = f"({', '.join(vals)}{',' if len(vals) == 1 else ''})"
        elif name == "relay.get_item":
            expr = f"{self.ref(op.operands[0])}.{op.attributes['index']}"
        elif name == "relay.construct":
            args = self.args(op)
            expr = op.attributes["constructor"] + (f"({args})" if args else "")
            if not args:   # `Nil` of List[T]: the let's type says which T (both parsers take it)
                self.out.append(f"{ind}let {self.name(r)}: {tvm_type(r.type)} = {expr};")
                return
        elif name == "relay.if":
            self.out.append(f"{ind}{self.name(r)} = if ({self.ref(op.operands[0])}) {{")
            self.block(op.regions[0].blocks[0], depth + 1)
            self.out.append(f"{ind}}} else {{")
            self.block(op.regions[1].blocks[0], depth + 1)
            self.out.append(f"{ind}}}{ty};")
            return
        elif name == "relay.fn":
            b = op.regions[0].blocks[0]
            params = ", ".join(f"{self.name(a)}: {tvm_type(a.type)}" for a in b.args)
            self.out.append(f"{ind}{self.name(r)} = fn ({params}) {{")
            self.block(b, depth + 1)
            self.out.append(f"{ind}}}{ty};")
            return
        elif name == "relay.match":
            self.match(op, depth, ty)
            return
        elif name == "relay.ref_create":
            expr = f"ref({self.args(op)})"
        elif hasattr(op, "op_name") and name.startswith("relay."):
            expr = f"{op.op_name}({', '.join(filter(None, [self.args(op), self.attrs(op)]))})"
        else:
            raise TvmRelayExportError(op.loc, f"'{name}' has no counterpart in TVM's Relay text")
        self.out.append(f"{ind}{self.name(r)} = {expr}{ty};")

    def args(self, op):
        return ", ".join(self.ref(v) for v in op.operands)

    def attrs(self, op):
        out = []
        for k, spec in type(op).ATTRS.items():
            if k not in op.attributes:
                continue
            v = op.attributes[k]
            if v == spec.default:
                continue
            out.append(f"{k}={_attr(v)}")
        return ", ".join(out)

    def match(self, op, depth, ty):
        ind = "  " * depth
        kw = "match?" if op.attributes.get("partial") else "match"
        self.out.append(f"{ind}{self.name(op.results[0])} = {kw} ({self.ref(op.operands[0])}) {{")
        for pat, region in zip(op.attributes["patterns"], op.regions):
            b = region.blocks[0]
            binders = iter(b.args)
            self.out.append(f"{ind}  {self.pattern(pat, binders)} => {{")
            self.block(b, depth + 2)
            self.out.append(f"{ind}  }},")
        self.out.append(f"{ind}}}{ty};")

    def pattern(self, p, binders):
        from ...dialects.relay import patterns as P
        if not isinstance(p, P.Pat):
            p = P.from_attr(p)
        if p.kind == P.WILD:
            return "_"
        if p.kind == P.VAR:
            return self.name(next(binders))
        subs = [self.pattern(s, binders) for s in p.subs]
        if p.kind == P.TUPLE:
            return f"({', '.join(subs)})"
        return p.name + (f"({', '.join(subs)})" if subs else "")

    def metadata(self):
        nodes = [{"type_key": ""}, {"type_key": "Map", "keys": ["relay.Constant"], "data": [2]},
                 {"type_key": "Array", "data": list(range(3, 3 + len(self.arrays)))}]
        for i in range(len(self.arrays)):
            nodes.append({"type_key": "relay.Constant",
                          "attrs": {"_checked_type_": "0", "data": str(i), "span": "0", "virtual_device_": "0"}})
        return {"root": 1, "nodes": nodes,
                "b64ndarrays": [base64.b64encode(write_array(a)).decode("ascii") for a in self.arrays],
                "attrs": {"tvm_version": "0.8.0"}}


def _attr(v):
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, float):
        return repr(v) + "f"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_attr(x) for x in v) + "]"
    if isinstance(v, T.Type):
        return json.dumps(T.tvm_dtype_name(v))
    if v is None:
        return "None"
    return json.dumps(str(v))
