"""Classic TVM's Relay text into the relay dialect.

The TVM text is parsed (tvm_relay.lark) and written out as relay dialect
text, every op carrying ``loc("model.txt":line:col)`` of the TVM
expression it came from; the dialect's own parser then builds and types the
module, so a type error points into the TVM file.  The translation::

    def @f(%x: T) -> R { e }          relay.func @f(%x: T) -> R { ...; return %e }
    [Primitive=1]                      attributes {primitive}
    type List[A] { Cons(A, List[A]) }  relay.adt @List<A> { Cons(!A, !relay.adt<@List<!A>>) }
    %n = e; / let %x = e;              SSA values (names kept where they are free)
    op(%a, %b, attr=v)                 op(%a, %b) {attr = v}     (None attributes left out)
    @f(%a) / %f(%a) / Cons(%a)         call @f(%a) / call %f(%a) / Cons(%a)
    (%a, %b) / %t.0                    tuple(%a, %b) / get_item(%t) {index = 0}
    if (%c) { a } else { b }           if %c { ...; yield %a } else { ...; yield %b }
    fn (%y: T) { e }                   fn (%y: T) { ...; return %e }
    match (%v) { Cons(%h, _) => e }    match %v { Cons(%h, _) => { ...; yield %e } }
    1f, 2i64, 3, True                  constant dense<...> : tensor<f32 / i64 / i32 / i1>
    meta[relay.Constant][i]            the i-th constant of the #[metadata] section
    Tensor[(1, ?), float32], float32   tensor<1x?xf32>, tensor<f32>
    ref(%v), ref_read(%r), ref_write(%r, %v)
                                       ref_create(%v), ref_read(%r), ref_write(%r, %v)
    ref(Tensor[(2), float32])          !relay.ref<tensor<2xf32>>

`params` ({name: array}, e.g. from a ``relay.save_param_dict`` file) become
constants in place of @main's parameters of those names.
"""

from __future__ import annotations

import base64
import json
import os
import re

import numpy as np
from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput

from ...ir import types as T
from ...ir.diagnostics import DiagnosticError
from ...ir.location import FileLoc

_PARSER = None
_SUFFIX = {"f": "float32", "f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i16": "int16",
           "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
           "b": "bool"}
_NUM = re.compile(r"^(-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)(f16|f32|f64|f|i8|i16|i32|i64|u8|u16|u32|u64|b)?$")
_DROP_ATTRS = {"out_layout", "auto_scheduler_rewritten_layout", "meta_schedule_original_shape"}


def _parser():
    global _PARSER
    if _PARSER is None:
        with open(os.path.join(os.path.dirname(__file__), "tvm_relay.lark")) as f:
            _PARSER = Lark(f.read(), parser="lalr", lexer="contextual", propagate_positions=True)
    return _PARSER


class TvmRelayError(DiagnosticError):
    """TVM Relay text the importer cannot read."""


def dtype_text(name, loc):
    try:
        return str(T.from_dtype_name(name))
    except (KeyError, ValueError, TypeError):
        raise TvmRelayError(loc, f"unknown dtype '{name}'") from None


def import_tvm_relay(text, filename="<tvm-relay>", params=None):
    """The relay dialect module for classic TVM Relay `text`."""
    from ...parser import parse_module
    dialect, locs = _translate(text, filename, params)
    generated = filename + " (as relay)"
    try:
        return parse_module(dialect, generated)
    except DiagnosticError as e:
        # an error found while an op was read points into the generated
        # text: move it to the TVM expression that line came from
        where = e.loc.file_line_col() if e.loc is not None else None
        if where is None or where[0] != generated or not 0 < where[1] <= len(locs):
            raise
        raise TvmRelayError(locs[where[1] - 1], e.diagnostics[0].message) from None


def to_dialect_text(text, filename="<tvm-relay>", params=None):
    """The relay dialect text for classic TVM Relay `text`."""
    return _translate(text, filename, params)[0]


def _translate(text, filename, params):
    """(dialect text, [FileLoc in the TVM text of each generated line])."""
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as e:
        loc = FileLoc(filename, e.line, e.column)
        got = getattr(e, "token", None)
        what = f"unexpected '{got}'" if got is not None and str(got) else "unexpected input"
        expected = sorted(getattr(e, "expected", None) or getattr(e, "allowed", None) or [])
        raise TvmRelayError(loc, f"{what} in TVM Relay text" +
                            (f" (expected one of: {', '.join(expected[:8])})" if expected else "")) from None
    w = _Writer(filename, params or {})
    return w.module(tree), w.line_locs


class _Scope:
    def __init__(self, parent=None):
        self.parent, self.names = parent, {}

    def lookup(self, name):
        s = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return None


class _Writer:
    def __init__(self, filename, params):
        self.file, self.params = filename, dict(params)
        self.lines = []
        self.line_locs = []     # the TVM location each generated line came from
        self.at = FileLoc(filename, 1, 1)
        self.depth = 0
        self.count = 0
        self.used = set()
        self.resources = {}
        self.meta = []
        self.adts = {}          # name -> type parameter names
        self.type_params = ()   # inside an ADT definition

    # -- output ---------------------------------------------------------------------
    def loc(self, node):
        meta = getattr(node, "meta", None)
        if meta is not None and not getattr(meta, "empty", True):
            return FileLoc(self.file, meta.line, meta.column)
        if isinstance(node, Token) and node.line is not None:
            return FileLoc(self.file, node.line, node.column)
        return FileLoc(self.file, 1, 1)

    def loc_text(self, node):
        loc = self.loc(node)
        return f'loc({json.dumps(loc.file)}:{loc.line}:{loc.col})'

    def emit(self, line, loc=None):
        self.lines.append("  " * self.depth + line)
        self.line_locs.append(loc or self.at)

    def fresh(self, hint=None):
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint) if hint else "v"
        if hint and base not in self.used and not base[0].isdigit():
            self.used.add(base)
            return "%" + base
        while True:
            self.count += 1
            name = f"{base}_{self.count}" if hint else f"v{self.count}"
            if name not in self.used:
                self.used.add(name)
                return "%" + name

    def op(self, text, node, hint=None):
        v = self.fresh(hint)
        self.emit(f"{v} = {text} {self.loc_text(node)}", self.loc(node))
        return v

    # -- the module -------------------------------------------------------------------
    def module(self, tree):
        for child in tree.children:
            if isinstance(child, Token) and child.type == "METADATA":
                self.meta = _metadata_constants(str(child), self.loc(child))
        for child in tree.children:
            if isinstance(child, Tree) and child.data == "type_def":
                self.type_def(child)
        for child in tree.children:
            if isinstance(child, Tree) and child.data == "func_def":
                self.func_def(child)
        if self.params:
            raise TvmRelayError(FileLoc(self.file, 1, 1), f"params name(s) not among @main's parameters: "
                                                          f"{', '.join(sorted(self.params))}")
        out = "\n".join(self.lines) + "\n"
        if self.resources:
            out += "\n{-#\n  dialect_resources: {\n    builtin: {\n"
            out += ",\n".join(f'      {k}: "0x{v}"' for k, v in self.resources.items())
            out += "\n    }\n  }\n#-}\n"
        return out

    def type_def(self, t):
        self.at = self.loc(t)
        name = str(t.children[0])
        tparams = [str(x) for x in t.children[1].children] if t.children[1] is not None else []
        self.adts[name] = tparams
        self.type_params = tuple(tparams)
        ctors = []
        for c in t.children[2:]:
            if c is None:
                continue
            cname = str(c.children[0])
            fields = [self.type(x) for x in c.children[1:] if x is not None]
            ctors.append(cname + (f"({', '.join(fields)})" if fields else ""))
        self.type_params = ()
        tp = f"<{', '.join(tparams)}>" if tparams else ""
        self.emit(f"relay.adt @{name}{tp} {{ {', '.join(ctors)} }}")

    def func_def(self, t):
        self.at = self.loc(t)
        name, tparams, params, ret, attrs, body = _signature(t)
        if tparams is not None:
            raise TvmRelayError(self.loc(t), f"{name}: polymorphic functions have no counterpart "
                                             "(relay dialect functions are monomorphic)")
        self.used = set()
        scope = _Scope()
        sig, binds = [], []
        for p in params:
            pname, ptype = str(p.children[0])[1:], p.children[1]
            if ptype is None:
                raise TvmRelayError(self.loc(p), f"parameter %{pname} of {name} needs a type")
            if name == "@main" and pname in self.params:
                binds.append((pname, self.params.pop(pname), p))
                continue
            v = self.fresh(pname)
            scope.names[pname] = v
            sig.append(f"{v}: {self.type(ptype)}")
        result = f" -> {self.type(ret)}" if ret is not None else ""
        fattrs = ""
        if attrs is not None and any(str(a.children[0]) == "Primitive" for a in attrs.children):
            fattrs = " attributes {primitive}"
        self.emit(f"relay.func {name}({', '.join(sig)}){result}{fattrs} {{")
        self.depth += 1
        for pname, arr, p in binds:
            scope.names[pname] = self.constant(np.asarray(arr), p, hint=pname, key=pname)
        v = self.seq(body.children[0], scope)
        self.emit(f"return {v}")
        self.depth -= 1
        self.emit("}")
        self.emit("")

    # -- expressions ---------------------------------------------------------------------
    def seq(self, t, scope):
        """Bindings then a final expression (a Tree 'seq' or one expression)."""
        if isinstance(t, Tree) and t.data == "seq":
            *bindings, last = t.children
            inner = _Scope(scope)
            for b in bindings:
                name = str(b.children[0])[1:]
                value = b.children[-1]
                typed = b.data == "let_binding" and b.children[1] is not None
                if typed and isinstance(value, Tree) and value.data == "name" and str(value.children[0])[:1].isupper():
                    # `let %n: List[T] = Nil;`: a nullary constructor takes its type from the let
                    inner.names[name] = self.op(f"{value.children[0]} : {self.type(b.children[1])}", value, name)
                    continue
                inner.names[name] = self.expr(value, inner, hint=name)
            return self.expr(last, inner)
        return self.expr(t, scope)

    def expr(self, t, scope, hint=None):
        if isinstance(t, Token):
            raise TvmRelayError(self.loc(t), f"unexpected '{t}'")
        kind = t.data
        method = getattr(self, "x_" + kind, None)
        if method is None:
            raise TvmRelayError(self.loc(t), f"'{kind}' expressions are not supported")
        return method(t, scope, hint)

    def x_seq(self, t, scope, hint):
        return self.seq(t, scope)

    def x_local(self, t, scope, hint):
        name = str(t.children[0])[1:]
        v = scope.lookup(name)
        if v is None:
            raise TvmRelayError(self.loc(t), f"unknown variable %{name}")
        return v

    def x_global_ref(self, t, scope, hint):
        return self.op(f"constant {t.children[0]}", t, hint)

    def x_name(self, t, scope, hint):
        name = str(t.children[0])
        if name[:1].isupper():
            return self.op(name, t, hint)   # a constructor without arguments
        raise TvmRelayError(self.loc(t), f"'{name}' is an operator; call it with its arguments")

    x_op_name = x_name

    def x_number(self, t, scope, hint):
        text = str(t.children[0])
        m = _NUM.match(text)
        num, suffix = m.group(1), m.group(2)
        if suffix is None:
            dtype = "float32" if any(c in num for c in ".eE") else "int32"
        else:
            dtype = _SUFFIX[suffix]
        if dtype.startswith("float"):
            value = float(num)
            why = T.float_range_error(value, T.from_dtype_name(dtype))
        else:
            value = int(float(num)) if any(c in num for c in ".eE") else int(num)
            info = np.iinfo(np.dtype(dtype)) if dtype != "bool" else None
            why = None if info is None or info.min <= value <= info.max else \
                f"{value} is out of range for {dtype} ({info.min} .. {info.max})"
        if why:
            raise TvmRelayError(self.loc(t), f"literal {text}: {why}")
        return self.constant(np.asarray(value, dtype=np.dtype(dtype)), t, hint)

    def x_true(self, t, scope, hint):
        return self.constant(np.asarray(True), t, hint)

    def x_false(self, t, scope, hint):
        return self.constant(np.asarray(False), t, hint)

    def x_meta(self, t, scope, hint):
        kind, index = str(t.children[0]), int(t.children[1])
        if kind != "relay.Constant":
            raise TvmRelayError(self.loc(t), f"meta[{kind}] is not supported (only relay.Constant)")
        if index >= len(self.meta):
            raise TvmRelayError(self.loc(t), f"meta[relay.Constant][{index}]: the #[metadata] section has "
                                             f"{len(self.meta)} constant(s)")
        return self.constant(self.meta[index], t, hint, key=f"meta_{index}")

    def x_unit(self, t, scope, hint):
        return self.op("tuple()", t, hint)

    def x_tuple(self, t, scope, hint):
        vals = [self.expr(c, scope) for c in t.children]
        return self.op(f"tuple({', '.join(vals)})", t, hint)

    x_tuple1 = x_tuple

    def x_proj(self, t, scope, hint):
        v = self.expr(t.children[0], scope)
        return self.op(f"get_item({v}) {{index = {int(t.children[1])}}}", t, hint)

    def x_call(self, t, scope, hint):
        callee, *args = t.children
        args = [a for a in args if a is not None]
        attrs = [a for a in args if isinstance(a, Tree) and a.data == "attr"]
        values = [self.expr(a, scope) for a in args if not (isinstance(a, Tree) and a.data == "attr")]
        if isinstance(callee, Tree) and callee.data in ("op_name", "name"):
            name = str(callee.children[0])
            if name[:1].isupper():
                return self.op(f"{name}({', '.join(values)})", t, hint)
            if name == "ref":     # ref(v), ref_read(r), ref_write(r, v): relay's ref_create / ...
                name = "ref_create"
            return self.op(f"{name}({', '.join(values)}){self.attrs(name, attrs)}", t, hint)
        if attrs:
            raise TvmRelayError(self.loc(attrs[0]), "attributes are only for operator calls")
        if isinstance(callee, Tree) and callee.data == "global_ref":
            return self.op(f"call {callee.children[0]}({', '.join(values)})", t, hint)
        f = self.expr(callee, scope)
        return self.op(f"call {f}({', '.join(values)})", t, hint)

    def attrs(self, op, attrs):
        from ...ir.core import OP_CLASSES
        from ...ir.registry import load_dialect
        load_dialect("relay")
        cls = OP_CLASSES.get("relay." + op)
        out = []
        for a in attrs:
            key, value = str(a.children[0]), self.attr_value(a.children[1])
            if value is None:
                continue
            if cls is not None and key not in cls.ATTRS:
                if key in _DROP_ATTRS or value in ('""', "[]"):
                    continue   # TVM prints some internal attributes empty
                raise TvmRelayError(self.loc(a), f"relay op '{op}' has no attribute '{key}' "
                                                 f"(it has: {', '.join(cls.ATTRS) or 'none'})")
            out.append(f"{key} = {value}")
        return f" {{{', '.join(out)}}}" if out else ""

    def attr_value(self, v):
        kind = v.data
        if kind == "str_value":
            return str(v.children[0])
        if kind in ("num_value", "neg_value"):
            m = _NUM.match(str(v.children[0]))
            num = m.group(1)
            sign = "-" if kind == "neg_value" else ""
            if any(c in num for c in ".eE") or (m.group(2) or "").startswith("f"):
                return sign + repr(float(num))
            return sign + str(int(num))
        if kind == "true":
            return "true"
        if kind == "false":
            return "false"
        if kind == "none":
            return None
        if kind == "list_value":
            items = [self.attr_value(x) for x in v.children if x is not None]
            return "[" + ", ".join(i for i in items if i is not None) + "]"
        if kind == "name_value":
            return json.dumps(str(v.children[0]))
        raise TvmRelayError(self.loc(v), f"attribute value '{kind}' is not supported")

    def x_if_expr(self, t, scope, hint):
        cond = self.expr(t.children[0], scope)
        v = self.fresh(hint)
        self.emit(f"{v} = if {cond} {{", self.loc(t))
        self.region(t.children[1].children[0], scope, "yield")
        self.emit("} else {")
        self.region(t.children[2].children[0], scope, "yield")
        self.emit(f"}} {self.loc_text(t)}")
        return v

    def region(self, body, scope, terminator):
        self.depth += 1
        r = self.seq(body, _Scope(scope))
        self.emit(f"{terminator} {r}")
        self.depth -= 1

    def x_fn_expr(self, t, scope, hint):
        _, tparams, params, ret, _, body = _signature(t)
        if tparams is not None:
            raise TvmRelayError(self.loc(t), "a polymorphic closure has no counterpart in the relay dialect")
        inner = _Scope(scope)
        sig = []
        for p in params:
            pname = str(p.children[0])[1:]
            if p.children[1] is None:
                raise TvmRelayError(self.loc(p), f"closure parameter %{pname} needs a type")
            pv = self.fresh(pname)
            inner.names[pname] = pv
            sig.append(f"{pv}: {self.type(p.children[1])}")
        v = self.fresh(hint)
        self.emit(f"{v} = fn ({', '.join(sig)})" + (f" -> {self.type(ret)}" if ret is not None else "") + " {",
                  self.loc(t))
        self.region(body.children[0], inner, "return")
        self.emit(f"}} {self.loc_text(t)}")
        return v

    def x_match_expr(self, t, scope, hint):
        kw, value, *arms = t.children
        x = self.expr(value, scope)
        v = self.fresh(hint)
        self.emit(f"{v} = {kw} {x} {{", self.loc(t))
        self.depth += 1
        for arm in arms:
            if arm is None:
                continue
            pattern, body = arm.children
            inner = _Scope(scope)
            self.emit(f"{self.pattern(pattern, inner)} => {{")
            self.region(body, inner, "yield")
            self.emit("}")
        self.depth -= 1
        self.emit(f"}} {self.loc_text(t)}")
        return v

    def pattern(self, p, scope):
        kind = p.data
        if kind == "pat_wild":
            return "_"
        if kind == "pat_var":
            name = str(p.children[0])[1:]
            v = self.fresh(name)
            scope.names[name] = v
            return v
        if kind == "pat_ctor":
            subs = [self.pattern(c, scope) for c in p.children[1:] if c is not None]
            return str(p.children[0]) + (f"({', '.join(subs)})" if subs else "")
        subs = [self.pattern(c, scope) for c in p.children if c is not None]
        return f"({', '.join(subs)})"

    # -- constants and types ----------------------------------------------------------------
    def constant(self, arr, node, hint=None, key=None):
        arr = np.asarray(arr)
        dt = dtype_text(arr.dtype.name if arr.dtype != bool else "bool", self.loc(node))
        shape = "x".join(str(d) for d in arr.shape)
        ty = f"tensor<{shape + 'x' if shape else ''}{dt}>"
        if arr.size <= 16:
            vals = arr.tolist()   # json writes lists (bools as true / false); a scalar is written alone
            body = json.dumps(vals) if arr.ndim else ("true" if vals else "false") if arr.dtype == bool else repr(vals)
            return self.op(f"constant dense<{body}> : {ty}", node, hint)
        name = re.sub(r"[^A-Za-z0-9_]", "_", key or hint or "c")
        while name in self.resources:
            name += "_"
        data = np.ascontiguousarray(arr)
        data = data.astype(data.dtype.newbyteorder("<")) if data.dtype.byteorder == ">" else data
        self.resources[name] = max(data.dtype.itemsize, 1).to_bytes(4, "little").hex().upper() + \
            data.tobytes().hex().upper()
        return self.op(f"constant dense_resource<{name}> : {ty}", node, hint)

    def type(self, t):
        kind = t.data
        if kind == "tensor_type":
            *dims, dtype = t.children
            ds = []
            for d in dims:
                if d is None:
                    continue
                x = d.children[0] if d.children else None
                ds.append("?" if x is None or not str(x).isdigit() else str(x))
            return f"tensor<{''.join(d + 'x' for d in ds)}{dtype_text(str(dtype), self.loc(t))}>"
        if kind == "tuple_type":
            return f"tuple<{', '.join(self.type(c) for c in t.children if c is not None)}>"
        if kind == "fn_type":
            *ins, out = [c for c in t.children[1:] if c is not None]
            return f"({', '.join(self.type(i) for i in ins)}) -> {self.type(out)}"
        if kind == "any_type":
            raise TvmRelayError(self.loc(t), "an unknown type '?' needs to be written out")
        if kind == "ref_type":
            return f"!relay.ref<{self.type(t.children[1])}>"
        name = str(t.children[0])
        args = [self.type(c) for c in t.children[1:] if c is not None]
        if name in self.type_params:
            return f"!{name}"
        if name in self.adts:
            return f"!relay.adt<@{name}" + (f"<{', '.join(args)}>" if args else "") + ">"
        return f"tensor<{dtype_text(name, self.loc(t))}>"


_TYPES = {"tensor_type", "tuple_type", "fn_type", "ref_type", "named_type", "any_type"}


def _signature(t):
    """(name or None, type_params, [param], return type, attrs_block, body) of a def / fn."""
    kids = [c for c in t.children if c is not None]
    name = str(kids[0]) if isinstance(kids[0], Token) else None

    def first(kind):
        return next((c for c in kids if isinstance(c, Tree) and c.data == kind), None)
    params = [c for c in kids if isinstance(c, Tree) and c.data == "param"]
    ret = next((c for c in kids if isinstance(c, Tree) and c.data in _TYPES), None)
    return name, first("type_params"), params, ret, first("attrs_block"), first("body")


def _metadata_constants(text, loc):
    """The arrays of meta[relay.Constant][i], from TVM's #[metadata] JSON."""
    from .params import ParamsError, read_array
    body = text[text.index("]") + 1:].strip()
    try:
        graph = json.loads(body)
        nodes = graph["nodes"]
        arrays = graph.get("b64ndarrays", [])
        root = nodes[graph["root"]]
        table = dict(zip(root.get("keys", []), root.get("data", [])))
        if "relay.Constant" not in table:
            return []
        out = []
        for ni in nodes[int(table["relay.Constant"])].get("data", []):
            data_index = int(nodes[int(ni)]["attrs"]["data"])
            arr, _ = read_array(base64.b64decode(arrays[data_index]))
            out.append(arr)
        return out
    except (ValueError, KeyError, IndexError, TypeError, ParamsError) as e:
        raise TvmRelayError(loc, f"#[metadata] is not TVM's constant table: "
                                                        f"{type(e).__name__}: {e}") from None
