"""Relay text of two reference graphs, as an ONNX import gives them.

    resnet_text(size=32, width=8)     a ResNet-style CNN (constants as weights)
    bert_layer_text(seq=128, hidden=768, heads=12, ffn=3072)
                                      one BERT-base encoder layer (weights as parameters)

Used by tests/test_relay_graph_passes.py (kernel and layout-transform
counts, numerics at small sizes) and bench/relay_passes.py.

ResNet: conv7x7/2 + batch_norm + relu, max_pool 3x3/2, a basic block
(conv + bn + relu, conv + bn, residual add, relu), a downsampling block
(its shortcut a strided 1x1 conv + bn), global_avg_pool2d, batch_flatten,
dense + bias_add: TVM's ONNX import of a torchvision ResNet, cut short.

BERT: Q/K/V projections ``nn.dense`` on the 3-d hidden state + ``add``,
heads by reshape/transpose, scores by ``nn.batch_matmul`` on flattened
heads (TVM's MatMul import), scale ``divide``, mask ``add``, ``nn.softmax``,
context ``batch_matmul``, transpose/reshape back, output projection + bias
+ residual, LayerNorm as TVM's ONNX import expands it (mean, subtract,
power, mean, add eps, sqrt, divide, multiply, add), the FFN with GELU in
its erf form (divide, erf, add, multiply, multiply), residual, LayerNorm.
``layer_norm="op"`` writes ``nn.layer_norm`` instead, ``matmul="flatten"``
writes TVM's ONNX MatMul import (reshape -> dense -> reshape) for the
projections.
"""

from __future__ import annotations


def _t(shape, dtype="f32"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


class _Text:
    def __init__(self):
        self.lines = []
        self.blobs = {}
        self.n = 0

    def op(self, text, name=None):
        self.n += 1
        name = name or f"v{self.n}"
        self.lines.append(f"  %{name} = {text}")
        return f"%{name}"

    def const(self, name, array):
        """A weight in the resource section (little-endian, MLIR's blob form)."""
        self.blobs[name] = "0x04000000" + array.astype("<f4").tobytes().hex().upper()
        self.lines.append(f"  %{name} = constant dense_resource<{name}> : {_t(array.shape)}")
        return f"%{name}"

    def scalar(self, value):
        self.n += 1
        name = f"s{self.n}"
        self.lines.append(f"  %{name} = constant dense<{float(value)!r}> : tensor<f32>")
        return f"%{name}"

    def module(self, header, result):
        text = header + " {\n" + "\n".join(self.lines) + f"\n  return {result}\n}}\n"
        if self.blobs:
            text += "\n{-#\n  dialect_resources: {\n    builtin: {\n"
            text += ",\n".join(f"      {k}: \"{v}\"" for k, v in self.blobs.items())
            text += "\n    }\n  }\n#-}\n"
        return text


# -- ResNet-style -------------------------------------------------------------------------------

def resnet_text(size=32, width=8, classes=10, batch_norm=True, seed=0):
    """A small ResNet in relay text, NCHW, weights as constants."""
    import numpy as np
    rng = np.random.default_rng(seed)
    t = _Text()
    k = [0]

    def weight(shape, scale=None):
        k[0] += 1
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        s = scale if scale is not None else (2.0 / fan_in) ** 0.5
        return t.const(f"w{k[0]}", (rng.standard_normal(shape) * s).astype(np.float32))

    def conv_bn(x, cin, cout, ksize, stride, relu):
        w = weight((cout, cin, ksize, ksize))
        pad = ksize // 2
        attrs = f"strides = [{stride}, {stride}], padding = [{pad}, {pad}], channels = {cout}, " \
                f"kernel_size = [{ksize}, {ksize}]"
        y = t.op(f"nn.conv2d({x}, {w}) {{{attrs}}}")
        if batch_norm:
            gamma = weight((cout,), 0.2)
            beta = weight((cout,), 0.2)
            mean = weight((cout,), 0.2)
            var = t.const(f"w{k[0]}_var", (rng.random(cout) + 0.5).astype(np.float32))
            bn = t.op(f"nn.batch_norm({y}, {gamma}, {beta}, {mean}, {var})")
            y = t.op(f"get_item({bn}) {{index = 0}}")
        else:
            y = t.op(f"nn.bias_add({y}, {weight((cout,), 0.2)})")
        return t.op(f"nn.relu({y})") if relu else y

    def block(x, cin, cout, stride):
        y = conv_bn(x, cin, cout, 3, stride, True)
        y = conv_bn(y, cout, cout, 3, 1, False)
        sc = x if stride == 1 and cin == cout else conv_bn(x, cin, cout, 1, stride, False)
        return t.op(f"nn.relu({t.op(f'add({y}, {sc})')})")

    y = conv_bn("%data", 3, width, 7, 2, True)
    y = t.op(f"nn.max_pool2d({y}) {{pool_size = [3, 3], strides = [2, 2], padding = [1, 1]}}")
    y = block(y, width, width, 1)
    y = block(y, width, 2 * width, 2)
    y = t.op(f"nn.global_avg_pool2d({y})")
    y = t.op(f"nn.batch_flatten({y})")
    y = t.op(f"nn.dense({y}, {weight((classes, 2 * width))})")
    y = t.op(f"nn.bias_add({y}, {weight((classes,), 0.2)})")
    return t.module(f"relay.func @main(%data: {_t((1, 3, size, size))})", y)


# -- BERT encoder layer -------------------------------------------------------------------------

def bert_layer_text(seq=128, hidden=768, heads=12, ffn=3072, layer_norm="expanded", matmul="dense"):
    """One BERT encoder layer; weights are parameters of @main."""
    t = _Text()
    dh = hidden // heads
    params = [("x", (1, seq, hidden)), ("mask", (1, 1, 1, seq))]
    for n, shape in (("wq", (hidden, hidden)), ("bq", (hidden,)), ("wk", (hidden, hidden)), ("bk", (hidden,)),
                     ("wv", (hidden, hidden)), ("bv", (hidden,)), ("wo", (hidden, hidden)), ("bo", (hidden,)),
                     ("g1", (hidden,)), ("be1", (hidden,)), ("w1", (ffn, hidden)), ("b1", (ffn,)),
                     ("w2", (hidden, ffn)), ("b2", (hidden,)), ("g2", (hidden,)), ("be2", (hidden,))):
        params.append((n, shape))

    def linear(x, w, b, n_out):
        if matmul == "flatten":
            f = t.op(f"reshape({x}) {{newshape = [-1, {_last(x)}]}}")
            d = t.op(f"nn.dense({f}, %{w})")
            d = t.op(f"reshape({d}) {{newshape = [1, {seq}, {n_out}]}}")
        else:
            d = t.op(f"nn.dense({x}, %{w})")
        return t.op(f"add({d}, %{b})")

    sizes = {"%x": hidden}

    def _last(x):
        return sizes.get(x, hidden)

    def heads_of(x, perm):
        r = t.op(f"reshape({x}) {{newshape = [1, {seq}, {heads}, {dh}]}}")
        return t.op(f"transpose({r}) {{axes = {perm}}}")

    def layer_norm_of(x, g, b):
        if layer_norm == "op":
            return t.op(f"nn.layer_norm({x}, %{g}, %{b}) {{epsilon = 1e-12}}")
        m = t.op(f"mean({x}) {{axis = [-1], keepdims = true}}")
        d = t.op(f"subtract({x}, {m})")
        p = t.op(f"power({d}, {t.scalar(2.0)})")
        v = t.op(f"mean({p}) {{axis = [-1], keepdims = true}}")
        e = t.op(f"add({v}, {t.scalar(1e-12)})")
        s = t.op(f"sqrt({e})")
        n = t.op(f"divide({d}, {s})")
        return t.op(f"add({t.op(f'multiply({n}, %{g})')}, %{b})")

    x = "%x"
    q = heads_of(linear(x, "wq", "bq", hidden), "[0, 2, 1, 3]")
    k = heads_of(linear(x, "wk", "bk", hidden), "[0, 2, 3, 1]")
    v = heads_of(linear(x, "wv", "bv", hidden), "[0, 2, 1, 3]")
    # MatMul(q, k): TVM's import flattens to 3-d and runs an NT batch_matmul
    q3 = t.op(f"reshape({q}) {{newshape = [-1, {seq}, {dh}]}}")
    k3 = t.op(f"reshape({k}) {{newshape = [-1, {dh}, {seq}]}}")
    kt = t.op(f"transpose({k3}) {{axes = [0, 2, 1]}}")
    s = t.op(f"nn.batch_matmul({q3}, {kt})")
    s = t.op(f"reshape({s}) {{newshape = [1, {heads}, {seq}, {seq}]}}")
    s = t.op(f"divide({s}, {t.scalar(float(dh) ** 0.5)})")
    s = t.op(f"add({s}, %mask)")
    p = t.op(f"nn.softmax({s}) {{axis = -1}}")
    p3 = t.op(f"reshape({p}) {{newshape = [-1, {seq}, {seq}]}}")
    v3 = t.op(f"reshape({v}) {{newshape = [-1, {seq}, {dh}]}}")
    vt = t.op(f"transpose({v3}) {{axes = [0, 2, 1]}}")
    c = t.op(f"nn.batch_matmul({p3}, {vt})")
    c = t.op(f"reshape({c}) {{newshape = [1, {heads}, {seq}, {dh}]}}")
    c = t.op(f"transpose({c}) {{axes = [0, 2, 1, 3]}}")
    c = t.op(f"reshape({c}) {{newshape = [1, {seq}, {hidden}]}}")
    o = linear(c, "wo", "bo", hidden)
    r1 = t.op(f"add({o}, {x})")
    ln1 = layer_norm_of(r1, "g1", "be1")
    f = linear(ln1, "w1", "b1", ffn)
    sizes[f] = ffn
    g = t.op(f"divide({f}, {t.scalar(2.0 ** 0.5)})")
    g = t.op(f"erf({g})")
    g = t.op(f"add({g}, {t.scalar(1.0)})")
    g = t.op(f"multiply({f}, {g})")
    g = t.op(f"multiply({g}, {t.scalar(0.5)})")
    sizes[g] = ffn
    f2 = linear(g, "w2", "b2", hidden)
    r2 = t.op(f"add({f2}, {ln1})")
    out = layer_norm_of(r2, "g2", "be2")
    header = "relay.func @main(" + ", ".join(f"%{n}: {_t(s)}" for n, s in params) + ")"
    return t.module(header, out)


def count_ops(module):
    """Relay ops in @main (constants, tuples and projections aside)."""
    main = next(op for op in module.body.ops if op.attributes.get("sym_name") == "main")
    skip = ("relay.constant", "relay.return", "relay.tuple", "relay.get_item")
    return sum(1 for op in main.body.ops if op.name not in skip)


def count_kernels(module):
    """Calls of primitive functions in @main."""
    funcs = {op.attributes.get("sym_name"): op for op in module.body.ops}
    main = funcs["main"]
    return sum(1 for op in main.body.ops if op.name == "relay.call"
               and "primitive" in funcs[op.attributes["callee"].name].attributes)
