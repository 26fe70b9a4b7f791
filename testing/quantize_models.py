"""A small ResNet-style CNN with seeded weights, for quantization tests and
bench/quantize_accuracy.py (in the spirit of TVM's relay.testing models).

    from tvmd.testing.quantize_models import resnet_like
    module = resnet_like(batch=100, width=16, seed=0)     # @main(%x: tensor<100x3x32x32xf32>)

Layers (NCHW, 32x32 inputs, ``width`` = w):

    conv 3->w 3x3 + bias + relu                          (conv2d #0)
    residual block w: conv + bias + relu, conv + bias, add, relu    (#1, #2)
    conv w->2w 3x3 stride 2 + bias + relu                (#3)   16x16
    residual block 2w                                    (#4, #5)
    conv 2w->4w 3x3 stride 2 + bias + relu               (#6)   8x8
    global_avg_pool2d, batch_flatten, dense 4w->10 + bias -> logits

The dense head is random, but centred on the pooled features of 64
reference inputs (seeded too) and scaled to logits of variance 1 over them,
so the predicted class varies with the input and top-1 agreement means
something.  (An uncentred random head predicts one class for every input:
the pooled features' common part outweighs what varies with the input.)

Weights are He-initialised (normal, std sqrt(2 / fan_in)) from
``numpy.random.default_rng(seed)``, each output channel then scaled by
``exp(N(0, spread^2))`` -- the uneven channels a folded batch_norm leaves,
which is what per-channel weight scales are for; the second conv of each
residual block is scaled by 0.5 so the sums stay in range; biases are
N(0, 0.1^2).
"""

from __future__ import annotations


def resnet_like(batch: int = 1, width: int = 16, seed: int = 0, classes: int = 10, spread: float = 0.5):
    """The CNN as a module whose @main takes ``tensor<batch x 3 x 32 x 32 x f32>``."""
    import numpy as np
    from ..dialects.relay.interpreter import run_function
    # the dense head is fitted to the features of reference inputs (zero
    # mean, unit variance per class), so that predictions vary with the input
    ref = random_inputs(1, REFERENCE_BATCH, seed + 1000)[0]
    feats = run_function(_build(REFERENCE_BATCH, width, seed, spread, None), "main", ref).astype(np.float64)
    mean = feats.mean(axis=0)
    w = np.random.default_rng(seed + 1).standard_normal((classes, feats.shape[1]))
    w /= ((feats - mean) @ w.T).std()
    return _build(batch, width, seed, spread, (w, -w @ mean))


REFERENCE_BATCH = 64


def _build(batch, width, seed, spread, head):
    """The module; `head` = (weight, bias) of the dense layer, or None for
    the convolutional trunk alone (returning the pooled features)."""
    import numpy as np
    from ..dialects.builtin.ops import ModuleOp
    from ..ir import types as T
    from ..ir.builder import Builder
    from ..ir.core import Block, Region
    from ..ir.registry import get_op_class
    from ..dialects.relay.ops.function import ConstantOp, FuncOp, ReturnOp

    rng = np.random.default_rng(seed)
    x_type = T.TensorType((batch, 3, 32, 32), T.f32)
    block = Block([x_type], ["x"])
    b = Builder.at_end(block)

    def op(name, *args, value_name=None, **attrs):
        return b.create(get_op_class("relay." + name), *args, name=value_name, **attrs)

    def const(arr, name):
        c = b.insert(ConstantOp.get(np.asarray(arr, np.float32), key=name))
        c.results[0].name = name
        return c.results[0]

    n = [0]

    def conv(x, cin, cout, stride=1, gain=1.0, relu=True):
        i = n[0]
        n[0] += 1
        w = rng.standard_normal((cout, cin, 3, 3)) * np.sqrt(2.0 / (cin * 9)) * gain
        # per-output-channel gains, as a folded batch_norm leaves them
        w *= np.exp(rng.standard_normal((cout, 1, 1, 1)) * spread)
        bias = rng.standard_normal(cout) * 0.1
        y = op("nn.conv2d", x, const(w, f"w{i}"), strides=(stride, stride), padding=(1, 1, 1, 1),
               value_name=f"conv{i}")
        y = op("nn.bias_add", y, const(bias, f"b{i}"), value_name=f"bias{i}")
        return op("nn.relu", y, value_name=f"relu{i}") if relu else y

    def residual(x, c, tag):
        y = conv(x, c, c)
        y = conv(y, c, c, gain=0.5, relu=False)
        return op("nn.relu", op("add", y, x, value_name=f"sum{tag}"), value_name=f"out{tag}")

    w = width
    y = conv(block.args[0], 3, w)
    y = residual(y, w, 1)
    y = conv(y, w, 2 * w, stride=2)
    y = residual(y, 2 * w, 2)
    y = conv(y, 2 * w, 4 * w, stride=2)
    y = op("nn.global_avg_pool2d", y, value_name="pool")
    y = op("nn.batch_flatten", y, value_name="flat")
    if head is not None:
        y = op("nn.dense", y, const(head[0], "fc_w"), value_name="fc")
        y = op("nn.bias_add", y, const(head[1], "fc_b"), value_name="logits")
    b.insert(ReturnOp([y], ()))
    func = FuncOp((), (), {"sym_name": "main", "function_type": T.FunctionType([x_type], [y.type])},
                  [Region([block])])
    module = ModuleOp.create_empty()
    module.body.append(func)
    return module


def random_inputs(n: int, batch: int, seed: int):
    """`n` float32 batches (batch, 3, 32, 32) of image-like noise: a random
    4x4 field per channel, blown up to 32x32, plus fine N(0, 0.25^2) noise,
    times a contrast exp(N(0, 0.4^2)) per image.  Like photographs, most of
    the energy is at low frequencies, which is what survives a CNN's pooling
    and tells inputs apart."""
    import numpy as np
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        coarse = rng.standard_normal((batch, 3, 4, 4))
        fine = rng.standard_normal((batch, 3, 32, 32)) * 0.25
        gain = np.exp(rng.standard_normal((batch, 1, 1, 1)) * 0.4)
        out.append((gain * (np.kron(coarse, np.ones((8, 8))) + fine)).astype(np.float32))
    return out
