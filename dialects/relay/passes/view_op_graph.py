"""--view-op-graph: a Graphviz picture of each relay function's dataflow (MLIR's name).

    tvm-opt m.relay --fuse-ops --view-op-graph                  # writes main.dot (one file per function)
    tvm-opt m.relay --fuse-ops --view-op-graph='output=g.dot'   # every function into g.dot
    tvm-opt m.relay --view-op-graph='output=-'                  # to stderr, as mlir-opt does
    dot -Tsvg main.dot -o main.svg

The IR is not changed: it goes on to the next pass (and to stdout) as it
came.  For each non-primitive relay.func, one ``digraph``:

* a parameter is an ellipse (``%x`` and its type); a constant a small grey
  box (its name and type, or its value when it has one element);
* an op is a box with its TVM name and result type (and, with
  ``print-attrs``, its non-default attributes); ``layout_transform`` is a
  yellow hexagon labelled ``src -> dst``, so one sees where ConvertLayout
  left transforms;
* a ``call`` of a primitive function (a kernel FuseOps made) is a cluster
  named after the callee holding the callee's ops, its parameters wired to
  the call's operands, so one sees what FuseOps grouped; a call of any other
  function is a 3-d box;
* an op with regions (``if``, ``match``, ``fn``) is a dashed cluster with
  one sub-cluster per region and the ops inside;
* edges are dataflow, producer to user; the function's results go to a
  ``return`` node.

Algorithm: one walk per function over its ops (and each called kernel's
ops), giving each value the dot node that defines it; linear in the ops
drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir.pass_manager import ModulePass, option
from ....ir.traits import TERMINATOR
from . import relay_functions
from ..ops.base import RelayOp
from ..ops.function import CallOp, ConstantOp, FuncOp
from ..ops.transform import LayoutTransformOp

LAYOUT_TRANSFORM = 'shape=hexagon, style="filled", fillcolor="#ffd54f", color="#b28704"'
CONSTANT = 'shape=box, style="filled", fillcolor="#eeeeee", fontsize=9, height=0.2, margin="0.04,0.02"'
PARAM = 'shape=ellipse, style="filled", fillcolor="#e3f2fd"'
CALL = 'shape=box3d, style="filled", fillcolor="#f3e5f5"'
RETURN = 'shape=oval, style="filled", fillcolor="#c8e6c9"'
# cluster attributes are statements: ';' between them
KERNEL_CLUSTER = 'style="rounded,filled"; fillcolor="#e8f5e9"; color="#2e7d32"'
REGION_CLUSTER = 'style="dashed"; color="#555555"'


@dataclass
class ViewOpGraph(ModulePass):
    """Write a Graphviz picture of each function's dataflow.

    A whole-module pass: fused groups are drawn from the functions they call."""

    NAME = "view-op-graph"
    OP = "builtin.module"
    output: str = option("", "where the dot text goes: '' one <function>.dot per function, "
                             "'-' stderr, else all in this file", path="write")
    print_attrs: bool = option(False, "show each op's attributes in its box")
    max_label_len: int = option(60, "cut labels longer than this many characters")

    def validate(self):
        if self.max_label_len < 8:
            raise ValueError(f"max-label-len must be at least 8, got {self.max_label_len}")

    def run(self, module, ctx):
        graphs = [(f.attributes["sym_name"], self.function_graph(module, f))
                  for f in relay_functions(module, include_primitive=False)]
        write_graphs(graphs, self.output, getattr(module, "loc", None))
        ctx.stat(self, "graphs-written", len(graphs))

    def function_graph(self, module, func) -> str:
        return DotWriter(module, self.print_attrs, self.max_label_len).function(func)


def write_graphs(graphs, output, loc=None):
    """Write the dot texts: to stderr ("-"), all into one file, or one
    ``<function>.dot`` file each in the current directory."""
    import sys
    if output == "-":
        for _, text in graphs:
            sys.stderr.write(text)
        return
    if output:
        _write(output, "".join(text for _, text in graphs), loc)
        return
    for name, text in graphs:
        _write(f"{safe_file_name(name)}.dot", text, loc)


def _write(path, text, loc):
    from ....ir.diagnostics import DiagnosticError
    from ....ir.location import UNKNOWN
    from ....ir.files import write_atomic
    try:
        write_atomic(path, text)
    except OSError as e:
        raise DiagnosticError(loc or UNKNOWN, f"view-op-graph cannot write '{path}': {e.strerror}") from None


def safe_file_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "graph"


def quote(text: str) -> str:
    """A dot string literal; newlines become dot's centred line breaks."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class DotWriter:
    def __init__(self, module, print_attrs, max_label_len):
        self.functions = {op.attributes.get("sym_name"): op for op in module.regions[0].blocks[0].ops}
        self.print_attrs = print_attrs
        self.max_len = max_label_len
        self.lines = []
        self.node_of = {}     # Value -> dot node id
        self.count = 0
        self.cluster_count = 0

    def new_id(self, prefix="n"):
        self.count += 1
        return f"{prefix}{self.count}"

    def short(self, text):
        return text if len(text) <= self.max_len else text[: self.max_len - 3] + "..."

    def emit(self, line, indent):
        self.lines.append("  " * indent + line)

    def function(self, func) -> str:
        name = func.attributes["sym_name"]
        self.emit(f"digraph {quote(name)} {{", 0)
        self.emit('node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="monospace"];', 1)
        self.emit(f'label={quote("@" + name)}; labelloc=t; fontname="monospace";', 1)
        block = func.regions[0].blocks[0]
        for a in block.args:
            nid = self.new_id("arg")
            self.node_of[a] = nid
            self.emit(f"{nid} [label={quote(self.short(f'%{a.name or a.index}') + chr(10) + str(a.type))}, {PARAM}];", 1)
        self.block(block, 1)
        self.emit("}", 0)
        return "\n".join(self.lines) + "\n"

    def block(self, block, indent, prefix=""):
        for op in block.ops:
            if TERMINATOR in op.traits:
                self.terminator(op, indent)
            elif isinstance(op, CallOp) and self.is_kernel(op):
                self.kernel(op, indent)
            elif op.regions:
                self.region_op(op, indent)
            else:
                self.plain(op, indent)

    def edges_into(self, op, nid, indent):
        for v in op.operands:
            src = self.node_of.get(v)
            if src is not None:
                self.emit(f"{src} -> {nid};", indent)

    def label(self, op):
        name = op.op_name if isinstance(op, RelayOp) else op.name
        if isinstance(op, CallOp):
            name = f"call @{op.attributes['callee'].name}"
        lines = [name]
        if self.print_attrs and isinstance(op, RelayOp) and not isinstance(op, (CallOp, ConstantOp)):
            from ....ir.printer import Printer
            for k, v in op.non_default_attrs().items():
                p = Printer()
                lines.append(self.short(f"{k} = {p.attr(v)}"))
        for r in op.results:
            lines.append(self.short(str(r.type)))
        return "\n".join(lines)

    def plain(self, op, indent):
        nid = self.new_id()
        if isinstance(op, ConstantOp):
            attr = op.attributes["value"]
            text = (f"{attr.array.flat[0].item()!r}" if attr.size == 1 else f"%{op.results[0].name or 'const'}")
            self.emit(f"{nid} [label={quote(self.short(text) + chr(10) + str(attr.type))}, {CONSTANT}];", indent)
        elif isinstance(op, LayoutTransformOp):
            a = op.attributes
            text = f"layout_transform\n{a['src_layout']} -> {a['dst_layout']}\n{op.results[0].type}"
            self.emit(f"{nid} [label={quote(text)}, {LAYOUT_TRANSFORM}];", indent)
        elif isinstance(op, CallOp):
            self.emit(f"{nid} [label={quote(self.label(op))}, {CALL}];", indent)
        else:
            self.emit(f"{nid} [label={quote(self.label(op))}];", indent)
        for r in op.results:
            self.node_of[r] = nid
        self.edges_into(op, nid, indent)

    def terminator(self, op, indent):
        if not op.operands:
            return
        nid = self.new_id("ret")
        self.emit(f"{nid} [label={quote(op.name.split('.')[-1])}, {RETURN}];", indent)
        self.edges_into(op, nid, indent)

    def is_kernel(self, call):
        f = self.functions.get(call.attributes["callee"].name)
        return isinstance(f, FuncOp) and "primitive" in f.attributes

    def kernel(self, call, indent):
        """The callee's ops, in a cluster, wired to the call's operands."""
        callee = self.functions[call.attributes["callee"].name]
        self.cluster_count += 1
        self.emit(f"subgraph cluster_{self.cluster_count} {{", indent)
        self.emit(f"label={quote('@' + callee.attributes['sym_name'])}; {KERNEL_CLUSTER};", indent + 1)
        body = callee.regions[0].blocks[0]
        for a, v in zip(body.args, call.operands):
            if v in self.node_of:
                self.node_of[a] = self.node_of[v]
        result = None
        for op in body.ops:
            if TERMINATOR in op.traits:
                if op.operands:
                    result = self.node_of.get(op.operands[0])
                continue
            self.plain(op, indent + 1)
        self.emit("}", indent)
        if result is None:   # a kernel that returns a parameter as it is
            self.plain(call, indent)
            return
        for r in call.results:
            self.node_of[r] = result

    def region_op(self, op, indent):
        self.cluster_count += 1
        self.emit(f"subgraph cluster_{self.cluster_count} {{", indent)
        self.emit(f"label={quote(self.label(op))}; {REGION_CLUSTER};", indent + 1)
        nid = self.new_id()
        self.emit(f"{nid} [label={quote(self.label(op))}, shape=diamond];", indent + 1)
        self.edges_into(op, nid, indent + 1)
        for i, r in enumerate(op.regions):
            for b in r.blocks:
                self.cluster_count += 1
                self.emit(f"subgraph cluster_{self.cluster_count} {{", indent + 1)
                self.emit(f"label={quote(f'region {i}')}; {REGION_CLUSTER};", indent + 2)
                for a in b.args:
                    aid = self.new_id("arg")
                    self.node_of[a] = aid
                    self.emit(f"{aid} [label={quote('%' + str(a.name or a.index) + chr(10) + str(a.type))}, {PARAM}];",
                              indent + 2)
                self.block(b, indent + 2)
                self.emit("}", indent + 1)
        self.emit("}", indent)
        for r in op.results:
            self.node_of[r] = nid

