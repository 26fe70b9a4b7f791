"""Declarative assembly formats: one string per op gives its custom syntax.

An op class declares its concise form the way MLIR ODS's ``assemblyFormat``
does::

    class BinaryOp(ArithOp):
        OPERANDS = ("lhs", "rhs")
        RESULTS = ("result",)
        ASSEMBLY_FORMAT = "$lhs `,` $rhs attr-dict `:` type($result)"

and that one string yields the printer (``print_custom``, attached here when
the class is defined), the Lark rule and the parse callback (made by
``parser/grammar.py`` from :func:`grammar_rules`).  Ops whose formats have
the same shape share one rule; its op-name terminal is the alternation of
their names.  Directives (docs/syntax.md, "Declarative assembly formats"):

``$name``
    an operand (``%x``; a variadic operand ``*name`` is ``%a, %b, ...``), or
    an attribute in the literal form of its kind: a string ``"exp"``, a
    symbol ``@f``, an integer, a number, ``true``/``false``, an enum value as
    a bare word; a kind ``any`` attribute is a scalar literal (integer,
    number, ``inf``/``nan``, ``true``/``false``).
``keyword($name)``
    a string attribute written as a bare identifier (``slt``).
``type($name)``
    the type of an operand or a result.  A result's type must come from the
    format or from the class's ``infer_types``; an operand's written type
    must equal the type of the value named (an error at the operand if not).
``attr-dict``
    ``{k = v, ...}``, the attributes no other directive prints; required in
    every format, so that nothing is lost in print.
```` `lit` ````
    a literal: punctuation (``,`` ``:`` ``(`` ``)`` ``[`` ``]`` ``<`` ``>``
    ``=`` ``->``) or a keyword (``to``).  ```` ` ` ```` is exactly one space,
    ```` `` ```` no space before the next element.
``(` ... `)?``
    an optional group, printed when its anchor (the element marked ``^``: a
    variadic operand, non-empty, or an attribute, set) is present.

Spacing follows MLIR's rules: one space between elements, none before
``,`` ``)`` ``]`` ``>``, none after ``(`` ``[`` ``<``, and none between a
value or attribute and a following ``(`` ``[`` ``<`` (``%A[%i]``,
``"exp"(%x)``).  A format that starts with ``(`` prints ``op (...)``.

An op whose attributes need its types to be read right (``arith.constant
1 : f32`` holds 1.0) defines ``coerce_parsed_attrs(cls, attrs, result_types)``.
"""

from __future__ import annotations

import re

from .attributes import print_attr

__all__ = ["FormatError", "AssemblyFormat", "compile_format", "attach_format", "Group"]


class FormatError(TypeError):
    """A bad ``ASSEMBLY_FORMAT``, reported when the class is defined."""


# -- elements -------------------------------------------------------------------

class _Lit:
    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text


class _Operand:
    __slots__ = ("name", "slot", "variadic", "anchor")

    def __init__(self, name, slot, variadic):
        self.name, self.slot, self.variadic, self.anchor = name, slot, variadic, False


class _Attr:
    __slots__ = ("name", "form", "anchor")

    def __init__(self, name, form):
        self.name, self.form, self.anchor = name, form, False


class _Type:
    __slots__ = ("of", "index", "name")   # of: "operand" | "result"

    def __init__(self, of, index, name):
        self.of, self.index, self.name = of, index, name


class _AttrDict:
    __slots__ = ()


class _Optional:
    __slots__ = ("elements", "anchor")

    def __init__(self, elements, anchor):
        self.elements, self.anchor = elements, anchor


_PUNCT = {",", ":", "(", ")", "[", "]", "<", ">", "=", "->"}
_KEYWORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_TOKEN = re.compile(r"\s*(?:(`[^`]*`)|(\$[A-Za-z_][A-Za-z0-9_]*\^?)|(attr-dict\^?)|(type|keyword)\(\s*(\$[A-Za-z_][A-Za-z0-9_]*)\s*\)(\^?)"
                    r"|(\()|(\)\?)|(\S+))")

# attribute kind name -> literal form (the grammar of each: _FORM_GRAMMAR)
_KIND_FORMS = {"string": "string", "symbol": "symbol", "integer": "int", "float": "float", "bool": "bool",
               "any": "scalar", "enum": "keyword"}


def _lex(fmt, err):
    """The format string as a list of raw tokens: (kind, text, extra)."""
    out = []
    pos = 0
    while pos < len(fmt):
        if fmt[pos:].strip() == "":
            break
        m = _TOKEN.match(fmt, pos)
        lit, ref, ad, fn, fnarg, fnanchor, lpar, rpar, junk = m.groups()
        if lit is not None:
            out.append(("lit", lit[1:-1], None))
        elif ref is not None:
            out.append(("ref", ref[1:].rstrip("^"), ref.endswith("^")))
        elif ad is not None:
            if ad.endswith("^"):
                raise err("attr-dict cannot be an optional group's anchor")
            out.append(("attr-dict", None, None))
        elif fn is not None:
            out.append((fn, fnarg[1:], fnanchor == "^"))
        elif lpar is not None:
            out.append(("(", None, None))
        elif rpar is not None:
            out.append((")?", None, None))
        else:
            raise err(f"unknown directive '{junk}' (expected $name, type($name), keyword($name), attr-dict, "
                      f"`literal` or an optional group (...)?)")
        pos = m.end()
    return out


class AssemblyFormat:
    """A compiled format: its elements, printer parts and parse plan."""

    def __init__(self, cls, text):
        self.text = text
        self.owner = cls.__name__
        if cls.OPERANDS is None or cls.RESULTS is None:
            raise self.error("the class must declare OPERANDS and RESULTS")
        self.operand_names = _names(cls.OPERANDS)
        self.result_names = _names(cls.RESULTS)
        self.variadic_slot = _variadic(cls.OPERANDS)
        self.elements = self._parse(cls, text)
        self._check(cls)
        self.consumed = frozenset(e.name for e in _flat(self.elements) if isinstance(e, _Attr))
        self.parts = _printer_parts(self.elements, self.consumed)
        self.grammar, self.steps, self.groups = _grammar(self.elements)
        self.infer = bool(self.result_names) and not any(
            isinstance(e, _Type) and e.of == "result" for e in _flat(self.elements))
        # ops with equal keys parse with one rule and one callback
        self.key = (self.grammar, tuple(g for g, _ in self.groups), repr(self.steps), len(self.operand_names),
                    self.variadic_slot, len(self.result_names), self.infer)

    def error(self, message):
        return FormatError(f"{self.owner}.ASSEMBLY_FORMAT {self.text!r}: {message}")

    # -- reading the format string --------------------------------------------

    def _parse(self, cls, text):
        toks = _lex(text, self.error)
        attrs = cls.ATTRS
        seen = set()
        stack = [[]]
        anchors = [None]

        for kind, name, anchor in toks:
            cur = stack[-1]
            if kind == "lit":
                if not (name in _PUNCT or _KEYWORD.match(name) or name in ("", " ")):
                    raise self.error(f"literal `{name}` is not punctuation ({' '.join(sorted(_PUNCT))}) "
                                     "or a keyword")
                cur.append(_Lit(name))
                continue
            if kind == "attr-dict":
                if len(stack) > 1:
                    raise self.error("attr-dict cannot be inside an optional group")
                if "attr-dict" in seen:
                    raise self.error("attr-dict appears twice")
                seen.add("attr-dict")
                cur.append(_AttrDict())
                continue
            if kind == "(":
                if len(stack) > 1:
                    raise self.error("optional groups do not nest")
                stack.append([])
                anchors.append(None)
                continue
            if kind == ")?":
                if len(stack) == 1:
                    raise self.error("')?' closes no optional group")
                els = stack.pop()
                anc = anchors.pop()
                if anc is None:
                    raise self.error("an optional group needs an anchor: mark one element with ^")
                if not any(not isinstance(e, _Lit) for e in els):
                    raise self.error("an optional group must hold an operand or attribute")
                stack[-1].append(_Optional(els, anc))
                continue
            # $name, type($name), keyword($name)
            if name in seen and kind != "type":
                raise self.error(f"'${name}' appears twice")
            if kind == "type":
                if name in self.operand_names:
                    i = self.operand_names.index(name)
                    if i == self.variadic_slot:
                        raise self.error(f"type(${name}): a variadic operand's types cannot be written")
                    el = _Type("operand", i, name)
                elif name in self.result_names:
                    el = _Type("result", self.result_names.index(name), name)
                else:
                    raise self.error(f"type(${name}): {cls.__name__} has no operand or result '{name}'")
                if ("type", name) in seen:
                    raise self.error(f"type(${name}) appears twice")
                seen.add(("type", name))
                if anchor:
                    raise self.error("a type cannot be an optional group's anchor")
                cur.append(el)
                continue
            seen.add(name)
            if name in self.operand_names:
                if kind == "keyword":
                    raise self.error(f"keyword(${name}): '{name}' is an operand, not an attribute")
                i = self.operand_names.index(name)
                el = _Operand(name, i, i == self.variadic_slot)
                if anchor and not el.variadic:
                    raise self.error(f"${name}^: only a variadic operand or an attribute can anchor a group")
            elif name in attrs:
                if kind == "keyword":
                    if attrs[name].kind.name != "string":
                        raise self.error(f"keyword(${name}) needs a string attribute, '{name}' is "
                                         f"{attrs[name].kind.name}")
                    form = "keyword"
                else:
                    form = _KIND_FORMS.get(attrs[name].kind.name)
                    if form is None:
                        raise self.error(f"attribute '{name}' of kind {attrs[name].kind.name} has no inline form; "
                                         "leave it to attr-dict")
                el = _Attr(name, form)
                if len(stack) == 1 and attrs[name].default is None:
                    raise self.error(f"attribute '{name}' may be unset: put it in an optional group as its "
                                     f"anchor, (... ${name}^ ...)?, or leave it to attr-dict")
            elif name in self.result_names:
                raise self.error(f"'${name}' is a result; results are named left of '=', write type(${name})")
            else:
                raise self.error(f"{cls.__name__} has no operand or attribute '{name}'")
            if anchor:
                if len(stack) == 1:
                    raise self.error(f"${name}^: an anchor outside an optional group")
                if anchors[-1] is not None:
                    raise self.error("an optional group has two anchors")
                anchors[-1] = el
                el.anchor = True
            cur.append(el)
        if len(stack) > 1:
            raise self.error("an optional group '(' is not closed with ')?'")
        return stack[0]

    def _check(self, cls):
        flat = list(_flat(self.elements))
        if not any(isinstance(e, _AttrDict) for e in flat):
            raise self.error("attr-dict is missing: every format prints the attributes it does not name")
        used = {e.name for e in flat if isinstance(e, _Operand)}
        for n in self.operand_names:
            if n not in used:
                raise self.error(f"operand '{n}' is not in the format")
        typed = {e.index for e in flat if isinstance(e, _Type) and e.of == "result"}
        if cls.RESULTS and cls.RESULTS[-1].startswith("*"):
            if typed:
                raise self.error("a variadic result's types cannot be written")
            if cls.infer_types is _base_infer():
                raise self.error("variadic results need an infer_types hook")
        if typed and len(typed) != len(self.result_names):
            missing = [n for i, n in enumerate(self.result_names) if i not in typed]
            raise self.error(f"the types of results {', '.join(missing)} are not in the format; write "
                             "type($result) for every result, or none and define infer_types")
        if not typed and self.result_names and cls.infer_types is _base_infer():
            raise self.error(f"nothing gives the type of result '{self.result_names[0]}': write "
                             f"type(${self.result_names[0]}) or define infer_types")
        # two adjacent bare operand lists would be ambiguous
        prev = None
        for e in self.elements:
            if isinstance(e, (_Operand, _Optional)) and isinstance(prev, _Operand) and prev.variadic:
                raise self.error(f"'${prev.name}' (variadic) must be followed by a literal")
            prev = e

    # -- printing ---------------------------------------------------------------

    def print(self, op, p):
        tmpl, fns = _template(self.parts)
        p.write(op.name + tmpl % tuple([f(op, p) for f in fns]))


def _base_infer():
    from .core import Operation
    return Operation.infer_types


def _names(decl):
    return [n.lstrip("*") for n in decl] if decl else []


def _variadic(decl):
    if decl and decl[-1].startswith("*"):
        return len(decl) - 1
    return -1


def _flat(elements):
    for e in elements:
        if isinstance(e, _Optional):
            yield from e.elements
        else:
            yield e


# -- printer ------------------------------------------------------------------------

class _Spacing:
    """MLIR's spacing rules for a format's elements, decided once."""

    def __init__(self):
        self.emit = True     # a space goes before the next element
        self.punct = True    # the last thing printed was punctuation (or the op name)

    def before_literal(self, text):
        if not self.emit:
            return ""
        if len(text) != 1 and text != "->":
            return " "
        if self.punct:
            return "" if text[0] in ">)}]," else " "
        return "" if text[0] in "<>(){}[]," else " "

    def after_literal(self, text):
        self.emit = not (len(text) == 1 and text in "<([{")
        self.punct = not (text[0] == "_" or text[0].isalpha())

    def before_value(self):
        return " " if self.emit else ""

    def after_value(self):
        self.emit, self.punct = True, False


def _printer_parts(elements, consumed):
    sp = _Spacing()
    parts = []

    def lit(s):
        if parts and type(parts[-1]) is str:
            parts[-1] += s
        elif s:
            parts.append(s)

    def emit(els, out_lit, out_fn):
        for e in els:
            if isinstance(e, _Lit):
                if e.text == " ":
                    out_lit(" ")
                    sp.emit, sp.punct = False, True
                elif e.text == "":
                    sp.emit = False
                else:
                    out_lit(sp.before_literal(e.text) + e.text)
                    sp.after_literal(e.text)
            elif isinstance(e, _AttrDict):
                f = _attr_dict_printer(consumed)
                f.consumed = consumed
                out_fn(f)
                sp.after_value()
            elif isinstance(e, _Optional):
                inner = []

                def ilit(s, inner=inner):
                    if inner and type(inner[-1]) is str:
                        inner[-1] += s
                    elif s:
                        inner.append(s)
                emit(e.elements, ilit, inner.append)
                out_fn(_group_printer(e.anchor, tuple(inner)))
            elif isinstance(e, _Operand) and e.variadic and sp.before_value():
                # a bare list: its space only when it has values (`te.x : T`, not `te.x  : T`)
                i = e.slot
                f = lambda op, p, i=i: " " + p.values(op.operands[i:]) if len(op.operands) > i else ""  # noqa: E731
                f.expr = f"(' ' + p.values(o[{i}:]) if len(o) > {i} else '')"
                out_fn(f)
                sp.after_value()
            else:
                out_lit(sp.before_value())
                out_fn(_value_printer(e))
                sp.after_value()

    emit(elements, lit, parts.append)
    return tuple(parts)


def _value_printer(e):
    """A function (op, printer) -> text, with ``expr``: the same as a Python
    expression over ``self``, ``p``, ``o`` (operands), ``a`` (attributes)."""
    if isinstance(e, _Operand):
        i = e.slot
        if e.variadic:
            f, x = (lambda op, p: p.values(op.operands[i:])), f"p.values(o[{i}:])"
        else:
            f, x = (lambda op, p: p.value(op.operands[i])), f"p.value(o[{i}])"
    elif isinstance(e, _Type):
        i = e.index
        if e.of == "operand":
            f, x = (lambda op, p: op.operands[i].type._text), f"o[{i}].type._text"
        else:
            f, x = (lambda op, p: op.results[i].type._text), f"self.results[{i}].type._text"
    else:
        name = e.name
        if e.form == "keyword":
            f, x = (lambda op, p: str(op.attributes[name])), f"str(a[{name!r}])"
        else:
            f, x = (lambda op, p: print_attr(op.attributes[name])), f"_print_attr(a[{name!r}])"
    f.expr = x
    return f


def _attr_dict_printer(skip):
    n = len(skip)

    def f(op, p):
        attrs = op.attributes
        if not attrs or (len(attrs) <= n and all(k in skip for k in attrs)):
            return ""
        s = p.attr_dict(attrs, skip)
        return "" if s == "{}" else " " + s
    return f


def _group_printer(anchor, parts):
    if isinstance(anchor, _Operand):
        i = anchor.slot

        def present(op):
            return len(op.operands) > i
    else:
        name = anchor.name

        def present(op):
            return op.attributes.get(name) is not None

    tmpl, fns = _template(parts)

    def f(op, p):
        if not present(op):
            return ""
        return tmpl % tuple([g(op, p) for g in fns])
    return f


def _printer_function(parts):
    """``print_custom`` for a format: one f-string, as ODS generates one
    C++ printer per op.  The source is made only from the format's
    elements, checked when it was read (names are identifiers, literals are
    punctuation or keywords), never from input text."""
    ns = {"_print_attr": print_attr}
    body = []
    for k, x in enumerate(parts):
        if type(x) is str:
            if any(ch in x for ch in '"\\\n{}'):
                raise FormatError(f"literal text {x!r} cannot be printed")
            body.append(x)
        elif hasattr(x, "expr"):
            body.append("{" + x.expr + "}")
        elif hasattr(x, "consumed"):   # attr-dict: nothing to print, no call
            ns[f"_f{k}"], ns[f"_c{k}"] = x, x.consumed
            body.append("{" + f"'' if a.keys() <= _c{k} else _f{k}(self, p)" + "}")
        else:
            ns[f"_f{k}"] = x
            body.append("{" + f"_f{k}(self, p)" + "}")
    text = "".join(body)
    src = ("def print_custom(self, p):\n"
           "    o = self.operands\n"
           "    a = self.attributes\n"
           f"    p.write(f\"{{self.name}}{text}\")\n")
    exec(compile(src, "<assembly format>", "exec"), ns)
    return ns["print_custom"]


def _template(parts):
    """Printer parts as a %-template and the functions that fill it."""
    return ("".join(x.replace("%", "%%") if type(x) is str else "%s" for x in parts),
            tuple(x for x in parts if type(x) is not str))


# -- grammar and parse plan --------------------------------------------------------
#
# Steps are what the parse callback does with each child Lark hands it:
#   ("operand", slot)      a VALUE token
#   ("oplist", slot)       a VALUE_LIST / INDEX_LIST token: the variadic operand
#   ("opvar", slot)        zero or more VALUE tokens: the variadic operand
#   ("type", ("operand"|"result", index))
#   ("attr", (name, form))
#   ("attr-dict", None)    optional dict
#   ("group", k)           optional Group (the k-th group subrule)

_FORM_GRAMMAR = {
    "string": "STRING", "symbol": "SYMBOL", "int": "INT", "float": "_fmt_number", "bool": "FMT_BOOL",
    "scalar": "_fmt_scalar", "keyword": "BARE_ID",
}


def _grammar(elements):
    groups = []

    def walk(els):
        pieces, steps = [], []
        i = 0
        while i < len(els):
            e = els[i]
            nxt = els[i + 1] if i + 1 < len(els) else None
            nxt2 = els[i + 2] if i + 2 < len(els) else None
            if (isinstance(e, _Lit) and e.text in ("(", "[") and isinstance(nxt, _Operand) and nxt.variadic
                    and isinstance(nxt2, _Lit) and nxt2.text == {"(": ")", "[": "]"}[e.text]):
                pieces.append("VALUE_LIST" if e.text == "(" else "INDEX_LIST")
                steps.append(("oplist", nxt.slot))
                i += 3
                continue
            if isinstance(e, _Lit):
                if e.text.strip():
                    pieces.append('"' + e.text + '"')
            elif isinstance(e, _Operand):
                if e.variadic:
                    pieces.append('[VALUE ("," VALUE)*]')
                    steps.append(("opvar", e.slot))
                else:
                    pieces.append("VALUE")
                    steps.append(("operand", e.slot))
            elif isinstance(e, _Type):
                pieces.append("type")
                steps.append(("type", (e.of, e.index)))
            elif isinstance(e, _Attr):
                pieces.append(_FORM_GRAMMAR[e.form])
                steps.append(("attr", (e.name, e.form)))
            elif isinstance(e, _AttrDict):
                pieces.append("[attr_dict]")
                steps.append(("attr-dict", None))
            elif isinstance(e, _Optional):
                body, sub = walk(e.elements)
                k = len(groups)
                groups.append((body, tuple(sub)))
                pieces.append("[{group%d}]" % k)
                steps.append(("group", k))
            i += 1
        return " ".join(pieces), steps

    body, steps = walk(elements)
    return body, tuple(steps), groups


class Group:
    """What an optional group's subrule hands its op's callback."""

    __slots__ = ("children",)

    def __init__(self, children):
        self.children = children


def compile_format(cls, text: str) -> AssemblyFormat:
    return AssemblyFormat(cls, text)


def attach_format(cls):
    """Called for each op class with an ``ASSEMBLY_FORMAT`` (by
    ``Operation.__init_subclass__``): compile it and give the class the
    printer.  A class that writes its own ``print_custom`` must say
    ``ASSEMBLY_FORMAT = None``."""
    text = cls.ASSEMBLY_FORMAT
    d = cls.__dict__
    if "print_custom" in d and not getattr(d["print_custom"], "_from_format", False):
        raise FormatError(f"{cls.__name__} defines print_custom and has ASSEMBLY_FORMAT {text!r}; "
                          "keep one (set ASSEMBLY_FORMAT = None to print by hand)")
    base = next((b._assembly_format for b in cls.__mro__[1:]
                 if b.__dict__.get("_assembly_format") is not None), None)
    if ("ASSEMBLY_FORMAT" not in d and base is not None and base.text == text
            and not any(k in d for k in ("OPERANDS", "RESULTS", "ATTRS"))):
        fmt = base
    else:
        fmt = AssemblyFormat(cls, text)
    cls._assembly_format = fmt

    print_custom = _printer_function(fmt.parts)
    print_custom._from_format = True
    cls.print_custom = print_custom
    return fmt
