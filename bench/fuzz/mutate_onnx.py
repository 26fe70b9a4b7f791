"""Mutations of ONNX models, at the protobuf level.

Each mutant parses a seed's bytes into a ModelProto, applies 1 to 3 of these,
and serialises it again (or, for ``bytes``, mutates the serialised bytes):

    op          a node's op_type becomes another (from the seeds or onnx's
                own list of schemas)
    input       a node input is dropped, emptied (""), duplicated or renamed
                to another value of the graph, or to one never defined
    output      a node output is dropped or renamed onto another value
    attr        an attribute's value becomes interesting (0, -1, 2^31, 2^63,
                nan, inf, huge lists, the wrong type), or it is dropped, or
                one from another node is added
    dims        a graph input/output dim becomes 0, -1, -7, 2^31, 2^40, a
                dim_param, or disappears; the element type changes
    init        an initializer's raw bytes are cut or grown, its dims or data
                type change, or it is dropped
    opset       the default domain's version becomes 0, -1, 1, 7, 99999
    node        a node is dropped, duplicated, or moved (topological order
                broken)
    subgraph    the same mutations inside a Loop/If/Scan body
    bytes       a byte of the serialised model is flipped, or the file cut
"""

from __future__ import annotations

import random

INTS = [0, 1, -1, 2, 3, -2, 7, 255, 2 ** 31 - 1, 2 ** 31, -2 ** 31, 2 ** 40, 2 ** 62, 2 ** 63 - 1, -2 ** 63]
FLOATS = [0.0, -0.0, 1.0, -1.0, 1e-45, 1e38, 3.5e38, float("nan"), float("inf"), float("-inf")]
DIMS = [0, 1, 2, -1, -7, 2 ** 31, 2 ** 40, 2 ** 62, "N", "?"]
OPSETS = [0, -1, 1, 6, 7, 11, 13, 18, 21, 99999]
ELEM_TYPES = list(range(0, 24))


def _op_names(seeds_ops):
    names = set(seeds_ops)
    try:
        from onnx import defs
        names |= {s.name for s in defs.get_all_schemas() if s.domain == ""}
    except Exception:
        pass
    return sorted(names)


def _graphs(g):
    """The graph and every subgraph in its nodes' attributes."""
    from onnx import AttributeProto
    out = [g]
    for n in g.node:
        for a in n.attribute:
            if a.type == AttributeProto.GRAPH:
                out.extend(_graphs(a.g))
            elif a.type == AttributeProto.GRAPHS:
                for sg in a.graphs:
                    out.extend(_graphs(sg))
    return out


def _values(g):
    names = {v.name for v in list(g.input) + list(g.output) + list(g.value_info)}
    names |= {i.name for i in g.initializer}
    for n in g.node:
        names |= set(n.input) | set(n.output)
    names.discard("")
    return sorted(names)


def _mutate_attr(rng, n, other_attrs):
    from onnx import AttributeProto, helper
    if not n.attribute or rng.random() < 0.15:
        if other_attrs:
            a = rng.choice(other_attrs)
            n.attribute.append(a)
        return
    a = rng.choice(list(n.attribute))
    r = rng.random()
    if r < 0.1:
        n.attribute.remove(a)
        return
    if r < 0.2:   # the right name with a value of the wrong type
        new = helper.make_attribute(a.name, rng.choice([rng.choice(INTS), rng.choice(FLOATS), "bogus", [1, 2], [0.5]]))
        n.attribute.remove(a)
        n.attribute.append(new)
        return
    if a.type == AttributeProto.INT:
        a.i = rng.choice(INTS)
    elif a.type == AttributeProto.FLOAT:
        a.f = rng.choice(FLOATS)
    elif a.type == AttributeProto.INTS:
        vals = list(a.ints)
        choice = rng.random()
        if vals and choice < 0.6:
            vals[rng.randrange(len(vals))] = rng.choice(INTS)
        elif choice < 0.8:
            vals = vals[:-1] if vals else [rng.choice(INTS)]
        else:
            vals = vals + [rng.choice(INTS)] * rng.choice([1, 3, 100])
        del a.ints[:]
        a.ints.extend(vals)
    elif a.type == AttributeProto.FLOATS:
        vals = list(a.floats) or [0.0]
        vals[rng.randrange(len(vals))] = rng.choice(FLOATS)
        del a.floats[:]
        a.floats.extend(vals)
    elif a.type == AttributeProto.STRING:
        a.s = rng.choice([b"", b"bogus", b"NCHW", b"linear", b"\xff\xfe", b"reverse", b"bidirectional"])
    elif a.type == AttributeProto.TENSOR:
        _mutate_tensor(rng, a.t)


def _mutate_tensor(rng, t):
    r = rng.random()
    if r < 0.3 and t.raw_data:
        raw = t.raw_data
        t.raw_data = raw[:rng.randrange(len(raw) + 1)] if rng.random() < 0.7 else raw + b"\0" * rng.choice([1, 4, 8])
    elif r < 0.6 and len(t.dims):
        t.dims[rng.randrange(len(t.dims))] = rng.choice([d for d in DIMS if isinstance(d, int)])
    elif r < 0.8:
        t.data_type = rng.choice(ELEM_TYPES)
    else:
        t.dims.append(rng.choice([1, 2, 0]))


def _mutate_dims(rng, g):
    vals = list(g.input) + list(g.output)
    if not vals:
        return
    v = rng.choice(vals)
    tt = v.type.tensor_type
    if rng.random() < 0.2:
        tt.elem_type = rng.choice(ELEM_TYPES)
        return
    dims = tt.shape.dim
    if not len(dims) or rng.random() < 0.1:
        tt.shape.dim.add().dim_value = rng.choice([1, 2, 3])
        return
    d = dims[rng.randrange(len(dims))]
    if rng.random() < 0.1:
        dims.remove(d)
        return
    new = rng.choice(DIMS)
    if isinstance(new, str):
        d.dim_param = new
    else:
        d.dim_value = new


def mutate_graph(rng, g, op_names, other_attrs):
    nodes = list(g.node)
    values = _values(g)
    op = rng.choice(["op", "input", "input", "output", "attr", "attr", "attr", "dims", "init", "node"])
    if op == "op" and nodes:
        rng.choice(nodes).op_type = rng.choice(op_names)
    elif op == "input" and nodes:
        n = rng.choice(nodes)
        ins = list(n.input)
        r = rng.random()
        if ins and r < 0.3:
            del ins[rng.randrange(len(ins))]
        elif ins and r < 0.45:
            ins[rng.randrange(len(ins))] = ""
        elif r < 0.6:
            ins.append(rng.choice(values + [""]) if values else "")
        elif ins and r < 0.9:
            ins[rng.randrange(len(ins))] = rng.choice(values) if values else "nowhere"
        elif ins:
            ins[rng.randrange(len(ins))] = "never_defined"
        del n.input[:]
        n.input.extend(ins)
    elif op == "output" and nodes:
        n = rng.choice(nodes)
        outs = list(n.output)
        if outs and rng.random() < 0.4:
            outs.pop()
        elif outs and values:
            outs[rng.randrange(len(outs))] = rng.choice(values)
        del n.output[:]
        n.output.extend(outs)
    elif op == "attr" and nodes:
        _mutate_attr(rng, rng.choice(nodes), other_attrs)
    elif op == "dims":
        _mutate_dims(rng, g)
    elif op == "init" and len(g.initializer):
        t = rng.choice(list(g.initializer))
        if rng.random() < 0.15:
            g.initializer.remove(t)
        else:
            _mutate_tensor(rng, t)
    elif op == "node" and nodes:
        r = rng.random()
        n = rng.choice(nodes)
        if r < 0.4:
            g.node.remove(n)
        elif r < 0.7:
            g.node.append(n)
        else:
            g.node.remove(n)
            g.node.insert(rng.randrange(len(g.node) + 1), n)
    return op


def mutate(rng: random.Random, data: bytes, op_names, other_attrs) -> tuple[bytes, list]:
    """A mutant of the serialised model `data`: (bytes, what was done)."""
    import onnx
    if rng.random() < 0.07:
        b = bytearray(data)
        if b and rng.random() < 0.5:
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        else:
            b = b[:rng.randrange(len(b) + 1)]
        return bytes(b), ["bytes"]
    m = onnx.ModelProto()
    m.ParseFromString(data)
    done = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        if rng.random() < 0.08:
            for o in m.opset_import:
                if o.domain in ("", "ai.onnx"):
                    o.version = rng.choice(OPSETS)
            done.append("opset")
            continue
        graphs = _graphs(m.graph)
        g = rng.choice(graphs) if len(graphs) > 1 and rng.random() < 0.4 else m.graph
        what = mutate_graph(rng, g, op_names, other_attrs)
        done.append(what if g is m.graph else "subgraph-" + what)
    return m.SerializeToString(), done


def seed_facts(seeds):
    """(op names, attributes) gathered from the seed models, for `op` and `attr`."""
    import onnx
    ops, attrs = set(), []
    for s in seeds:
        m = onnx.ModelProto()
        m.ParseFromString(s.data)
        for g in _graphs(m.graph):
            for n in g.node:
                ops.add(n.op_type)
                attrs.extend(a for a in n.attribute if a.type != onnx.AttributeProto.GRAPH)
    return _op_names(ops), attrs
