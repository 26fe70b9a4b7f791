"""Standard architectures as ONNX graphs, built in code with onnx.helper.

    from tvmd.testing.onnx_zoo import ZOO, resnet18
    model, feeds = ZOO["resnet18"](small=False)     # onnx.ModelProto, {input name: array}
    model, feeds = resnet18(size=32, width=8)       # any size by keyword

Each builder makes the published architecture at its real size by default
(batch 1, 224x224 images for the CNNs) with seeded random weights (He
initialisation; batch-norm statistics and biases drawn near their neutral
values), in the node patterns exporters emit (real BatchNormalization
nodes, ReLU6 as Clip, SiLU as x * Sigmoid(x), GELU through Erf or Tanh,
attention as MatMul / Transpose / Reshape / Softmax), and returns the model
with deterministic inputs.  Keyword parameters shrink it; ``ZOO[name](small=True)``
is a small variant for fast tests (32x32 or 48x48 images, channels / 4 to / 8,
fewer blocks; hidden 32 for the transformers; well under 2 s to compile
each), ``ZOO[name]()`` the full one.

    resnet18 resnet50 mobilenet_v2 squeezenet1_1 shufflenet_v2
    efficientnet_b0 vit_tiny bert_tiny gpt2 lstm

The ``*_onnx`` builders return the model alone: the models of
bench/models.py (a ResNet-style CNN, a MobileNet-v1-style CNN, ResNet-50's
layout, one BERT-base encoder layer).
"""

from __future__ import annotations

import math

import numpy as np

OPSET = 17


# -- building graphs ------------------------------------------------------------------

def tensor_info(name, shape, dtype=np.float32):
    """A graph input or output: name, shape (None: unknown) and numpy dtype."""
    from onnx import helper
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    return helper.make_tensor_value_info(name, elem, shape)


class GraphBuilder:
    """A graph under construction: nodes, initializers, fresh names and a
    seeded generator for the weights.  `random_bias`: whether biases and
    LayerNormalization parameters are random (near 0 and 1) or exactly 0
    and 1."""

    def __init__(self, seed=0, random_bias=False):
        self.nodes, self.inits, self.n = [], [], 0
        self.rng = np.random.default_rng(seed)
        self.random_bias = random_bias

    def name(self, p):
        self.n += 1
        return f"{p}{self.n}"

    def weight(self, shape, scale=None):
        """A random float32 initializer, N(0, scale^2); He's scale by default."""
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        scale = scale if scale is not None else (2.0 / fan_in) ** 0.5
        return self.const((self.rng.standard_normal(shape) * scale).astype(np.float32), "w")

    def const(self, array, prefix="c"):
        """An initializer holding `array` (its dtype kept)."""
        from onnx import numpy_helper
        name = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def scalar(self, value, dtype=np.float32):
        return self.const(np.array(value, dtype))

    def ints(self, values):
        """An int64 vector initializer (shapes, axes, split sizes)."""
        return self.const(np.array(values, np.int64))

    def bias(self, n):
        """A bias of `n`: N(0, 0.1^2) when random_bias, else zeros."""
        if self.random_bias:
            return self.const((0.1 * self.rng.standard_normal(n)).astype(np.float32))
        return self.const(np.zeros(n, np.float32))

    def gamma(self, n):
        """A normalization scale of `n`: 1 + N(0, 0.1^2) when random_bias, else ones."""
        if self.random_bias:
            return self.const((1 + 0.1 * self.rng.standard_normal(n)).astype(np.float32))
        return self.const(np.ones(n, np.float32))

    def node(self, op, inputs, **attrs):
        """Add one node; returns its (only) output's name."""
        return self.nodes_out(op, inputs, 1, **attrs)[0]

    def nodes_out(self, op, inputs, n_out, **attrs):
        """Add one node with `n_out` outputs; returns their names."""
        from onnx import helper
        outs = [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, **attrs))
        return outs

    def model(self, inputs, outputs):
        """The ModelProto (opset 17) of the nodes so far; `inputs` and
        `outputs` are value infos (see `tensor_info`)."""
        from onnx import helper
        g = helper.make_graph(self.nodes, "bench", inputs, outputs, self.inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)


def image_input(size, seed=100):
    """The input value info and a deterministic 1x3xSIZExSIZE feed named 'x'."""
    x = np.random.default_rng(seed).standard_normal((1, 3, size, size)).astype(np.float32)
    return tensor_info("x", [1, 3, size, size]), {"x": x}


# -- CNN pieces --------------------------------------------------------------------------

def conv(g, x, cin, cout, k, stride=1, group=1, bias=False, pad=None):
    """Conv, kxk, `pad` (default k // 2) on each side; no bias unless `bias`."""
    inputs = [x, g.weight((cout, cin // group, k, k))]
    if bias:
        inputs.append(g.bias(cout))
    pad = k // 2 if pad is None else pad
    grouped = {"group": group} if group != 1 else {}
    return g.node("Conv", inputs, kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4, **grouped)


def activation(g, x, act):
    """None, "relu", "relu6" (Clip to [0, 6]), "silu" (x * Sigmoid(x)) or "sigmoid"."""
    if act is None:
        return x
    if act == "relu":
        return g.node("Relu", [x])
    if act == "relu6":
        return g.node("Clip", [x, g.scalar(0.0), g.scalar(6.0)])
    if act == "silu":
        return g.node("Mul", [x, g.node("Sigmoid", [x])])
    if act == "sigmoid":
        return g.node("Sigmoid", [x])
    raise ValueError(f"unknown activation {act!r}")


def conv_bn(g, x, cin, cout, k, stride=1, relu=True, group=1, act=None):
    """Conv (no bias) + BatchNormalization (random statistics) + activation:
    `act`, or ReLU when `relu` and no `act` is given."""
    y = conv(g, x, cin, cout, k, stride, group)
    scale = g.const((1 + 0.1 * g.rng.standard_normal(cout)).astype(np.float32))
    bias = g.const((0.1 * g.rng.standard_normal(cout)).astype(np.float32))
    mean = g.const((0.1 * g.rng.standard_normal(cout)).astype(np.float32))
    var = g.const((1 + 0.1 * g.rng.random(cout)).astype(np.float32))
    y = g.node("BatchNormalization", [y, scale, bias, mean, var], epsilon=1e-5)
    return activation(g, y, act or ("relu" if relu else None))


def basic_block(g, x, cin, cout, stride):
    """ResNet's basic block: two 3x3 conv-BNs, a 1x1 conv-BN shortcut where the shape changes."""
    y = conv_bn(g, x, cin, cout, 3, stride)
    y = conv_bn(g, y, cout, cout, 3, 1, relu=False)
    sc = x if stride == 1 and cin == cout else conv_bn(g, x, cin, cout, 1, stride, relu=False)
    return g.node("Relu", [g.node("Add", [y, sc])])


def bottleneck(g, x, cin, mid, stride):
    """ResNet's bottleneck (v1.5: the stride on the 3x3): 1x1, 3x3, 1x1 to 4 * mid channels."""
    cout = mid * 4
    y = conv_bn(g, x, cin, mid, 1)
    y = conv_bn(g, y, mid, mid, 3, stride)
    y = conv_bn(g, y, mid, cout, 1, 1, relu=False)
    sc = x if stride == 1 and cin == cout else conv_bn(g, x, cin, cout, 1, stride, relu=False)
    return g.node("Relu", [g.node("Add", [y, sc])])


def classifier_head(g, x, c, classes=1000):
    """GlobalAveragePool, Flatten, Gemm c -> classes."""
    y = g.node("GlobalAveragePool", [x])
    y = g.node("Flatten", [y], axis=1)
    return g.node("Gemm", [y, g.weight((classes, c)), g.bias(classes)], transB=1)


def make_divisible(v, divisor=8):
    """torchvision's channel rounding for width multipliers."""
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


def _scaled(c, width):
    return make_divisible(c * width) if width != 1.0 else c


# -- ResNets -----------------------------------------------------------------------------------

def _resnet_graph(g, size, layers, block, width, classes):
    """Stem (conv7x7/2-BN-ReLU, max_pool 3x3/2), stages of `layers` blocks at
    width, 2 width, ..., head; returns the model."""
    y = conv_bn(g, "x", 3, width, 7, 2)
    y = g.node("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = width
    for i, blocks in enumerate(layers):
        planes = width * 2 ** i
        for b in range(blocks):
            stride = 2 if i > 0 and b == 0 else 1
            if block == "bottleneck":
                y = bottleneck(g, y, cin, planes, stride)
                cin = planes * 4
            else:
                y = basic_block(g, y, cin, planes, stride)
                cin = planes
    y = classifier_head(g, y, cin, classes)
    return g.model([image_input(size)[0]], [tensor_info(y, [1, classes])])


def resnet_onnx(size=224):
    """A ResNet-style CNN, batch 1: stem conv7x7/2 + max_pool to SIZE/4, two
    basic blocks of 64 channels, a downsampling block to 128 and a basic
    block there, global average pool, Gemm to 1000 classes (bias 0);
    input 'x' 1x3xSIZExSIZE."""
    return _resnet_graph(GraphBuilder(0), size, (2, 2), "basic", 64, 1000)


def resnet50_onnx(size=224):
    """ResNet-50's layout: stem, bottleneck stacks [3, 4, 6, 3], head (bias 0)."""
    return _resnet_graph(GraphBuilder(1), size, (3, 4, 6, 3), "bottleneck", 64, 1000)


def resnet18(size=224, width=64, layers=(2, 2, 2, 2), classes=1000):
    """torchvision's ResNet-18: conv7x7/2 + BN + ReLU + max_pool 3x3/2, basic
    blocks [2, 2, 2, 2] at 64, 128, 256, 512 channels (1x1 conv + BN
    shortcuts where the shape changes), global average pool, FC 1000.
    BatchNormalization in inference form (random statistics); `width`: the
    first stage's channels, `layers`: blocks per stage."""
    return _resnet_graph(GraphBuilder(10, True), size, layers, "basic", width, classes), image_input(size)[1]


def resnet50(size=224, width=64, layers=(3, 4, 6, 3), classes=1000):
    """torchvision's ResNet-50 (v1.5): the ResNet-18 stem and head, bottleneck
    blocks (1x1, 3x3 with the stride, 1x1 to 4x) [3, 4, 6, 3] at 64..512
    (outputs 256..2048); `width` and `layers` as for resnet18."""
    return _resnet_graph(GraphBuilder(11, True), size, layers, "bottleneck", width, classes), image_input(size)[1]


# -- MobileNets ----------------------------------------------------------------------------

def mobilenet_onnx(size=224):
    """MobileNet-v1-shaped: a 3x3/2 stem, eight depthwise 3x3 + pointwise
    1x1 (BN, ReLU) blocks from 32 to 1024 channels down to 7x7, global
    average pool, Gemm to 1000 classes."""
    g = GraphBuilder(5)
    x = conv_bn(g, "x", 3, 32, 3, 2)
    for cin, cout, s in [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1),
                         (256, 512, 2), (512, 512, 1), (512, 1024, 2)]:
        y = g.node("Conv", [x, g.weight((cin, 1, 3, 3))], kernel_shape=[3, 3], strides=[s, s], pads=[1] * 4,
                   group=cin)
        x = conv_bn(g, g.node("Relu", [y]), cin, cout, 1)
    y = classifier_head(g, x, 1024)
    return g.model([tensor_info("x", [1, 3, size, size])], [tensor_info(y, [1, 1000])])


# (expansion t, output channels c, repeats n, first stride s)
MOBILENET_V2_STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


def inverted_residual(g, x, cin, cout, stride, expand):
    """MobileNet-v2's block: 1x1 expand (unless t = 1), depthwise 3x3, 1x1
    linear projection; BN after each, ReLU6 after the first two; a residual
    add when the shape is kept."""
    hidden = cin * expand
    y = conv_bn(g, x, cin, hidden, 1, act="relu6") if expand != 1 else x
    y = conv_bn(g, y, hidden, hidden, 3, stride, group=hidden, act="relu6")
    y = conv_bn(g, y, hidden, cout, 1, relu=False)
    return g.node("Add", [x, y]) if stride == 1 and cin == cout else y


def mobilenet_v2(size=224, width=1.0, max_repeats=None, last_channel=1280, classes=1000):
    """torchvision's MobileNet-v2: conv3x3/2 to 32 channels, inverted
    residual stages 16-24-32-64-96-160-320 (expansion 6), conv1x1 to 1280,
    global average pool, FC 1000 (dropout omitted: inference).  `width`
    multiplies the channels (rounded to multiples of 8), `max_repeats`
    caps the blocks per stage."""
    g = GraphBuilder(12, True)
    inp, feeds = image_input(size)
    cin = _scaled(32, width)
    y = conv_bn(g, "x", 3, cin, 3, 2, act="relu6")
    for t, c, n, s in MOBILENET_V2_STAGES:
        cout = _scaled(c, width)
        for i in range(min(n, max_repeats or n)):
            y = inverted_residual(g, y, cin, cout, s if i == 0 else 1, t)
            cin = cout
    y = conv_bn(g, y, cin, last_channel, 1, act="relu6")
    y = classifier_head(g, y, last_channel, classes)
    return g.model([inp], [tensor_info(y, [1, classes])]), feeds


# -- SqueezeNet ---------------------------------------------------------------------------

def fire(g, x, cin, squeeze, expand):
    """SqueezeNet's fire module: squeeze 1x1, then expand 1x1 and 3x3
    side by side, concatenated on channels; convs with bias and ReLU."""
    s = g.node("Relu", [conv(g, x, cin, squeeze, 1, bias=True)])
    e1 = g.node("Relu", [conv(g, s, squeeze, expand, 1, bias=True)])
    e3 = g.node("Relu", [conv(g, s, squeeze, expand, 3, bias=True)])
    return g.node("Concat", [e1, e3], axis=1)


def squeezenet1_1(size=224, width=1.0, classes=1000):
    """torchvision's SqueezeNet 1.1: conv3x3/2 (64, no padding) + ReLU,
    max_pool 3x3/2 (ceil_mode) after the stem and after fire modules 2 and
    4, fire modules (squeeze, expand) 16-64, 16-64, 32-128, 32-128,
    48-192, 48-192, 64-256, 64-256, classifier conv1x1 to 1000 + ReLU,
    global average pool, Flatten (dropout omitted).  `width` scales every
    channel count."""
    g = GraphBuilder(13, True)
    inp, feeds = image_input(size)

    def ch(c):
        return max(1, int(c * width))

    def pool(y):
        return g.node("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)

    y = pool(g.node("Relu", [conv(g, "x", 3, ch(64), 3, 2, bias=True, pad=0)]))
    cin = ch(64)
    for i, (sq, ex) in enumerate(((16, 64), (16, 64), (32, 128), (32, 128),
                                  (48, 192), (48, 192), (64, 256), (64, 256))):
        y = fire(g, y, cin, ch(sq), ch(ex))
        cin = 2 * ch(ex)
        if i in (1, 3):
            y = pool(y)
    y = g.node("Relu", [conv(g, y, cin, classes, 1, bias=True)])
    y = g.node("Flatten", [g.node("GlobalAveragePool", [y])], axis=1)
    return g.model([inp], [tensor_info(y, [1, classes])]), feeds


# -- ShuffleNet ----------------------------------------------------------------------------

def channel_shuffle(g, x, channels, hw, groups=2):
    """Reshape to (1, groups, C / groups, H, W), swap the two channel axes, reshape back."""
    y = g.node("Reshape", [x, g.ints([1, groups, channels // groups, hw, hw])])
    y = g.node("Transpose", [y], perm=[0, 2, 1, 3, 4])
    return g.node("Reshape", [y, g.ints([1, channels, hw, hw])])


def shuffle_unit(g, x, cin, cout, stride, hw):
    """ShuffleNet-v2's unit.  Stride 1: split the channels in two halves,
    one passes through, the other goes 1x1-dw3x3-1x1; stride 2: both
    branches see all the input (dw3x3/2-1x1 and 1x1-dw3x3/2-1x1).  Then
    Concat and a channel shuffle."""
    half = cout // 2
    if stride == 1:
        keep, x2 = g.nodes_out("Split", [x, g.ints([half, half])], 2, axis=1)
        c2 = half
    else:
        keep = conv_bn(g, x, cin, cin, 3, 2, relu=False, group=cin)
        keep = conv_bn(g, keep, cin, half, 1)
        x2, c2 = x, cin
    y = conv_bn(g, x2, c2, half, 1)
    y = conv_bn(g, y, half, half, 3, stride, relu=False, group=half)
    y = conv_bn(g, y, half, half, 1)
    hw = (hw + 1) // 2 if stride == 2 else hw
    return channel_shuffle(g, g.node("Concat", [keep, y], axis=1), cout, hw), hw


def shufflenet_v2(size=224, widths=(24, 116, 232, 464, 1024), repeats=(4, 8, 4), classes=1000):
    """torchvision's ShuffleNet-v2 x1.0: conv3x3/2 to 24 + BN + ReLU,
    max_pool 3x3/2, stages of [4, 8, 4] units at 116, 232, 464 channels
    (the first of each with stride 2), conv1x1 to 1024 + BN + ReLU, the
    mean over H and W (ReduceMean, as exported), FC 1000."""
    g = GraphBuilder(14, True)
    inp, feeds = image_input(size)
    y = conv_bn(g, "x", 3, widths[0], 3, 2)
    y = g.node("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    hw = (size + 3) // 4
    cin = widths[0]
    for cout, n in zip(widths[1:-1], repeats):
        for i in range(n):
            y, hw = shuffle_unit(g, y, cin, cout, 2 if i == 0 else 1, hw)
            cin = cout
    y = conv_bn(g, y, cin, widths[-1], 1)
    y = g.node("ReduceMean", [y], axes=[2, 3], keepdims=0)
    y = g.node("Gemm", [y, g.weight((classes, widths[-1])), g.bias(classes)], transB=1)
    return g.model([inp], [tensor_info(y, [1, classes])]), feeds


# -- EfficientNet ------------------------------------------------------------------------------

# (expansion, kernel, first stride, output channels, repeats)
EFFICIENTNET_B0_STAGES = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                          (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1))


def squeeze_excite(g, x, channels, squeeze):
    """GlobalAveragePool, 1x1 conv to `squeeze` + SiLU, 1x1 conv back +
    Sigmoid, times the input."""
    s = g.node("GlobalAveragePool", [x])
    s = activation(g, conv(g, s, channels, squeeze, 1, bias=True), "silu")
    s = activation(g, conv(g, s, squeeze, channels, 1, bias=True), "sigmoid")
    return g.node("Mul", [x, s])


def mbconv(g, x, cin, cout, k, stride, expand):
    """EfficientNet's MBConv: 1x1 expand + BN + SiLU (unless 1), depthwise
    kxk + BN + SiLU, squeeze-excitation (to cin / 4), 1x1 projection + BN;
    a residual add when the shape is kept (stochastic depth: inference)."""
    hidden = cin * expand
    y = conv_bn(g, x, cin, hidden, 1, act="silu") if expand != 1 else x
    y = conv_bn(g, y, hidden, hidden, k, stride, group=hidden, act="silu")
    y = squeeze_excite(g, y, hidden, max(1, cin // 4))
    y = conv_bn(g, y, hidden, cout, 1, relu=False)
    return g.node("Add", [y, x]) if stride == 1 and cin == cout else y


def efficientnet_b0(size=224, width=1.0, max_repeats=None, last_channel=1280, classes=1000):
    """torchvision's EfficientNet-B0: conv3x3/2 to 32 + BN + SiLU, MBConv
    stages (expansion, kernel, stride, channels, repeats) (1,3,1,16,1)
    (6,3,2,24,2) (6,5,2,40,2) (6,3,2,80,3) (6,5,1,112,3) (6,5,2,192,4)
    (6,3,1,320,1), conv1x1 to 1280 + BN + SiLU, global average pool, FC
    1000 (dropout omitted).  `width` multiplies channels (multiples of 8),
    `max_repeats` caps the blocks per stage."""
    g = GraphBuilder(15, True)
    inp, feeds = image_input(size)
    cin = _scaled(32, width)
    y = conv_bn(g, "x", 3, cin, 3, 2, act="silu")
    for t, k, s, c, n in EFFICIENTNET_B0_STAGES:
        cout = _scaled(c, width)
        for i in range(min(n, max_repeats or n)):
            y = mbconv(g, y, cin, cout, k, s if i == 0 else 1, t)
            cin = cout
    y = conv_bn(g, y, cin, last_channel, 1, act="silu")
    y = classifier_head(g, y, last_channel, classes)
    return g.model([inp], [tensor_info(y, [1, classes])]), feeds


# -- transformer pieces ---------------------------------------------------------------------

def dense(g, x, n_in, n_out, scale=0.02):
    """MatMul by an n_in x n_out weight, plus a bias (as exporters emit nn.Linear)."""
    return g.node("Add", [g.node("MatMul", [x, g.weight((n_in, n_out), scale)]), g.bias(n_out)])


def layer_norm(g, x, hidden, eps=1e-5):
    return g.node("LayerNormalization", [x, g.gamma(hidden), g.bias(hidden)], axis=-1, epsilon=eps)


def gelu_erf(g, x):
    """0.5 * x * (1 + erf(x / sqrt(2)))."""
    erf = g.node("Erf", [g.node("Div", [x, g.scalar(2 ** 0.5)])])
    return g.node("Mul", [g.node("Mul", [x, g.node("Add", [erf, g.scalar(1.0)])]), g.scalar(0.5)])


def gelu_tanh(g, x):
    """0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))), GPT-2's form."""
    inner = g.node("Add", [x, g.node("Mul", [g.node("Pow", [x, g.scalar(3.0)]), g.scalar(0.044715)])])
    t = g.node("Tanh", [g.node("Mul", [inner, g.scalar(math.sqrt(2 / math.pi))])])
    return g.node("Mul", [g.node("Mul", [g.scalar(0.5), x]), g.node("Add", [t, g.scalar(1.0)])])


def split_heads(g, x, seq, heads, dh, perm):
    """(1, seq, heads * dh) -> Reshape (1, seq, heads, dh) -> Transpose `perm`."""
    r = g.node("Reshape", [x, g.ints([1, seq, heads, dh])])
    return g.node("Transpose", [r], perm=perm)


def attention(g, q, k, v, seq, hidden, heads, mask=None, causal=None):
    """Scaled dot-product attention over (1, seq, hidden) q, k, v:
    Q K^T / sqrt(dh) (+ an additive `mask`; `causal`: a bool (seq, seq)
    initializer name, masked scores set by Where to float32's minimum),
    Softmax, times V, heads merged back to (1, seq, hidden)."""
    dh = hidden // heads
    q = split_heads(g, q, seq, heads, dh, [0, 2, 1, 3])
    k = split_heads(g, k, seq, heads, dh, [0, 2, 3, 1])
    v = split_heads(g, v, seq, heads, dh, [0, 2, 1, 3])
    s = g.node("Div", [g.node("MatMul", [q, k]), g.scalar(dh ** 0.5)])
    if mask is not None:
        s = g.node("Add", [s, mask])
    if causal is not None:
        s = g.node("Where", [causal, s, g.scalar(np.finfo(np.float32).min)])
    p = g.node("Softmax", [s], axis=-1)
    ctx = g.node("Transpose", [g.node("MatMul", [p, v])], perm=[0, 2, 1, 3])
    return g.node("Reshape", [ctx, g.ints([1, seq, hidden])])


def bert_encoder_layer(g, h, mask, seq, hidden, heads, ffn, eps=1e-12):
    """A post-LayerNorm BERT encoder layer on (1, seq, hidden) `h` with the
    additive (1, 1, 1, seq) `mask`: Q/K/V MatMul + bias, attention, output
    projection + residual + LayerNorm, GELU (erf) FFN + residual + LayerNorm."""
    q, k, v = (dense(g, h, hidden, hidden) for _ in range(3))
    ctx = attention(g, q, k, v, seq, hidden, heads, mask=mask)
    h1 = layer_norm(g, g.node("Add", [dense(g, ctx, hidden, hidden), h]), hidden, eps)
    f = gelu_erf(g, dense(g, h1, hidden, ffn))
    return layer_norm(g, g.node("Add", [dense(g, f, ffn, hidden), h1]), hidden, eps)


def bert_layer_onnx(seq=128, hidden=768, heads=12, ffn=3072):
    """One BERT-base encoder layer; inputs 'h' 1xSEQxHIDDEN and 'mask' 1x1x1xSEQ (additive)."""
    g = GraphBuilder(2)
    out = bert_encoder_layer(g, "h", "mask", seq, hidden, heads, ffn)
    return g.model([tensor_info("h", [1, seq, hidden]), tensor_info("mask", [1, 1, 1, seq])],
                   [tensor_info(out, None)])


def _token_ids(seq, vocab, seed):
    return np.random.default_rng(seed).integers(0, vocab, (1, seq)).astype(np.int64)


# -- ViT ---------------------------------------------------------------------------------------

def vit_block(g, x, tokens, dim, heads, mlp):
    """A pre-LayerNorm ViT block: x + attention(LN(x)), then x + MLP(LN(x));
    QKV as one MatMul, reshaped to (1, tokens, 3, heads, dh), permuted to
    (3, 1, heads, tokens, dh) and taken apart with Gather (timm's unbind)."""
    dh = dim // heads
    qkv = dense(g, layer_norm(g, x, dim, 1e-6), dim, 3 * dim)
    qkv = g.node("Reshape", [qkv, g.ints([1, tokens, 3, heads, dh])])
    qkv = g.node("Transpose", [qkv], perm=[2, 0, 3, 1, 4])
    q, k, v = (g.node("Gather", [qkv, g.const(np.array(i, np.int64))], axis=0) for i in range(3))
    s = g.node("Mul", [g.node("MatMul", [q, g.node("Transpose", [k], perm=[0, 1, 3, 2])]),
                       g.scalar(dh ** -0.5)])
    ctx = g.node("MatMul", [g.node("Softmax", [s], axis=-1), v])
    ctx = g.node("Reshape", [g.node("Transpose", [ctx], perm=[0, 2, 1, 3]), g.ints([1, tokens, dim])])
    x = g.node("Add", [x, dense(g, ctx, dim, dim)])
    f = dense(g, gelu_erf(g, dense(g, layer_norm(g, x, dim, 1e-6), dim, mlp)), mlp, dim)
    return g.node("Add", [x, f])


def vit_tiny(size=224, patch=16, dim=192, depth=12, heads=3, mlp=768, classes=1000):
    """ViT-Ti/16 (timm's vit_tiny_patch16_224): patch embedding as a
    16x16/16 Conv, flattened and transposed to tokens, a class token
    concatenated in front, position embeddings added, 12 pre-LayerNorm
    blocks (3 heads, MLP 768, GELU via Erf), final LayerNorm, the class
    token's features (Gather) to a MatMul + bias head of 1000."""
    g = GraphBuilder(16, True)
    inp, feeds = image_input(size)
    n = (size // patch) ** 2
    y = conv(g, "x", 3, dim, patch, patch, bias=True, pad=0)
    y = g.node("Transpose", [g.node("Reshape", [y, g.ints([1, dim, n])])], perm=[0, 2, 1])
    y = g.node("Concat", [g.weight((1, 1, dim), 0.02), y], axis=1)
    y = g.node("Add", [y, g.weight((1, n + 1, dim), 0.02)])
    for _ in range(depth):
        y = vit_block(g, y, n + 1, dim, heads, mlp)
    y = g.node("Gather", [layer_norm(g, y, dim, 1e-6), g.const(np.array(0, np.int64))], axis=1)
    y = dense(g, y, dim, classes)
    return g.model([inp], [tensor_info(y, [1, classes])]), feeds


# -- BERT --------------------------------------------------------------------------------------

def bert_tiny(seq=128, layers=2, hidden=128, heads=2, ffn=512, vocab=30522, max_pos=512):
    """BERT-tiny (google/bert_uncased_L-2_H-128_A-2): int64 'input_ids' and
    'attention_mask' (1 = attend) of 1xSEQ; word (Gather) + position
    (Gather of arange) + token-type (Gather of zeros) embeddings,
    LayerNorm, the mask made additive ((1 - mask) * -10000, Unsqueeze to
    1x1x1xSEQ), 2 post-LN encoder layers (2 heads, FFN 512, GELU via Erf),
    outputs the last hidden state and the pooler (the first token, dense +
    Tanh).  The feeds mask out the last eighth of the sequence."""
    g = GraphBuilder(17, True)
    word = g.node("Gather", [g.weight((vocab, hidden), 0.02), "input_ids"], axis=0)
    pos = g.node("Gather", [g.weight((max_pos, hidden), 0.02), g.const(np.arange(seq, dtype=np.int64)[None])])
    typ = g.node("Gather", [g.weight((2, hidden), 0.02), g.const(np.zeros((1, seq), np.int64))])
    h = layer_norm(g, g.node("Add", [g.node("Add", [word, pos]), typ]), hidden, 1e-12)
    m = g.node("Cast", [g.node("Unsqueeze", ["attention_mask", g.ints([1, 2])])], to=1)
    m = g.node("Mul", [g.node("Sub", [g.scalar(1.0), m]), g.scalar(-10000.0)])
    for _ in range(layers):
        h = bert_encoder_layer(g, h, m, seq, hidden, heads, ffn)
    first = g.node("Gather", [h, g.const(np.array(0, np.int64))], axis=1)
    pooled = g.node("Tanh", [dense(g, first, hidden, hidden)])
    mask = np.ones((1, seq), np.int64)
    mask[:, seq - seq // 8:] = 0
    feeds = {"input_ids": _token_ids(seq, vocab, 101), "attention_mask": mask}
    model = g.model([tensor_info("input_ids", [1, seq], np.int64), tensor_info("attention_mask", [1, seq], np.int64)],
                    [tensor_info(h, [1, seq, hidden]), tensor_info(pooled, [1, hidden])])
    return model, feeds


# -- GPT-2 -------------------------------------------------------------------------------------

def gpt2_block(g, x, causal, seq, hidden, heads):
    """A pre-LayerNorm GPT-2 block: x + c_proj(attention(c_attn(LN(x))))
    with QKV as one MatMul + bias Split into three and the causal mask,
    then x + MLP(LN(x)) with GELU's tanh form (FFN 4 * hidden)."""
    qkv = dense(g, layer_norm(g, x, hidden), hidden, 3 * hidden)
    q, k, v = g.nodes_out("Split", [qkv, g.ints([hidden] * 3)], 3, axis=-1)
    x = g.node("Add", [x, dense(g, attention(g, q, k, v, seq, hidden, heads, causal=causal), hidden, hidden)])
    f = dense(g, gelu_tanh(g, dense(g, layer_norm(g, x, hidden), hidden, 4 * hidden)), 4 * hidden, hidden)
    return g.node("Add", [x, f])


def gpt2(seq=64, layers=2, hidden=768, heads=12, vocab=50257, max_pos=1024):
    """GPT-2 (small's width, 2 of its 12 layers): int64 'input_ids' 1xSEQ,
    token (Gather) + position (Gather of arange) embeddings, pre-LayerNorm
    blocks (12 heads, the causal mask as a constant lower-triangular bool
    and Where), final LayerNorm, the LM head tied to the token embedding
    (the same matrix, transposed, as an initializer: as torch exports it)
    to logits over the full 50257-token vocabulary."""
    g = GraphBuilder(18, True)
    wte = (g.rng.standard_normal((vocab, hidden)) * 0.02).astype(np.float32)
    x = g.node("Gather", [g.const(wte), "input_ids"], axis=0)
    pos = g.node("Gather", [g.weight((max_pos, hidden), 0.01), g.const(np.arange(seq, dtype=np.int64)[None])])
    x = g.node("Add", [x, pos])
    causal = g.const(np.tril(np.ones((seq, seq), bool))[None, None])
    for _ in range(layers):
        x = gpt2_block(g, x, causal, seq, hidden, heads)
    logits = g.node("MatMul", [layer_norm(g, x, hidden), g.const(np.ascontiguousarray(wte.T))])
    model = g.model([tensor_info("input_ids", [1, seq], np.int64)], [tensor_info(logits, [1, seq, vocab])])
    return model, {"input_ids": _token_ids(seq, vocab, 102)}


# -- LSTM --------------------------------------------------------------------------------------

def lstm_layer(g, x, n_in, hidden):
    """An ONNX LSTM (forward, gates iofc, W/R/B initializers) on (seq, 1,
    n_in) `x`; returns its Y squeezed to (seq, 1, hidden)."""
    scale = hidden ** -0.5
    w = g.weight((1, 4 * hidden, n_in), scale)
    r = g.weight((1, 4 * hidden, hidden), scale)
    b = g.weight((1, 8 * hidden), scale)
    y = g.node("LSTM", [x, w, r, b], hidden_size=hidden)
    return g.node("Squeeze", [y, g.ints([1])])


def lstm(seq=64, n_in=128, hidden=256, layers=2, classes=10):
    """Two stacked ONNX LSTM layers (sequence-first, batch 1, input 128,
    hidden 256), the last step's output (Gather on the sequence axis) to a
    Gemm of 10 classes; input 'x' SEQx1xN_IN."""
    g = GraphBuilder(19, True)
    y, n = "x", n_in
    for _ in range(layers):
        y, n = lstm_layer(g, y, n, hidden), hidden
    last = g.node("Gather", [y, g.const(np.array(seq - 1, np.int64))], axis=0)
    out = g.node("Gemm", [last, g.weight((classes, hidden)), g.bias(classes)], transB=1)
    x = np.random.default_rng(103).standard_normal((seq, 1, n_in)).astype(np.float32)
    return g.model([tensor_info("x", [seq, 1, n_in])], [tensor_info(out, [1, classes])]), {"x": x}


# -- the zoo ---------------------------------------------------------------------------------

def _variant(builder, **small_kw):
    """`builder` as ``f(small=False)``: the full model, or the one of the `small_kw` keywords."""
    def build(small=False):
        return builder(**(small_kw if small else {}))
    build.__doc__ = builder.__doc__
    build.__name__ = builder.__name__
    return build


ZOO = {
    "resnet18": _variant(resnet18, size=32, width=8, classes=10),
    "resnet50": _variant(resnet50, size=32, width=8, layers=(1, 2, 1, 1), classes=10),
    "mobilenet_v2": _variant(mobilenet_v2, size=32, width=0.25, max_repeats=2, last_channel=64, classes=10),
    "squeezenet1_1": _variant(squeezenet1_1, size=48, width=0.125, classes=10),
    "shufflenet_v2": _variant(shufflenet_v2, size=32, widths=(8, 16, 32, 64, 64), repeats=(2, 1, 1), classes=10),
    "efficientnet_b0": _variant(efficientnet_b0, size=32, width=0.25, max_repeats=2, last_channel=64,
                                classes=10),
    "vit_tiny": _variant(vit_tiny, size=32, patch=8, dim=32, depth=2, heads=2, mlp=64, classes=10),
    "bert_tiny": _variant(bert_tiny, seq=16, hidden=32, heads=2, ffn=64, vocab=100, max_pos=32),
    "gpt2": _variant(gpt2, seq=16, hidden=32, heads=2, vocab=100, max_pos=32),
    "lstm": _variant(lstm, seq=8, n_in=16, hidden=32, classes=10),
}
