"""Write examples/cnn.relay: a small residual CNN with its weights.

    python examples/make_cnn.py

The weights are fixed random numbers (seed 0); the file is committed, this
script only shows where it came from.
"""

import os

import numpy as np

from tvmd.ir.attributes import DenseAttr
from tvmd.ir.printer import print_module
from tvmd.parser import parse_module

TEXT = """\
relay.func @main(%image: tensor<1x3x16x16xf32>, %conv1_w: tensor<8x3x3x3xf32>, %conv1_b: tensor<8xf32>,
                 %conv2_w: tensor<8x8x3x3xf32>, %conv2_b: tensor<8xf32>) -> tensor<1x8x16x16xf32> {
  %c1 = nn.conv2d(%image, %conv1_w) {padding = [1, 1, 1, 1], channels = 8, kernel_size = [3, 3]}
  %b1 = nn.bias_add(%c1, %conv1_b)
  %r1 = nn.relu(%b1)
  %c2 = nn.conv2d(%r1, %conv2_w) {padding = [1, 1, 1, 1], channels = 8, kernel_size = [3, 3]}
  %b2 = nn.bias_add(%c2, %conv2_b)
  %res = add(%b2, %r1)
  %r2 = nn.relu(%res)
  %scale = constant dense<0.5> : tensor<f32>
  %out = multiply(%r2, %scale)
  return %out
}
"""


def main():
    rng = np.random.default_rng(0)
    m = parse_module(TEXT)
    f = m.body.first
    # Bind every parameter but the image to a constant, as a frontend would.
    from tvmd.dialects.relay.ops.function import ConstantOp
    keep = f.body.args[0]
    for arg in list(f.body.args[1:]):
        shape = arg.type.shape
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        data = (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)
        c = ConstantOp.get(DenseAttr(data, arg.type, key=arg.name))
        c.result.name = arg.name
        f.body.prepend(c)
        arg.replace_all_uses_with(c.result)
    # drop the bound parameters from the signature
    from tvmd.ir import types as T
    f.body.args = [keep]
    f.attributes["function_type"] = T.FunctionType([keep.type], f.attributes["function_type"].results)
    out = os.path.join(os.path.dirname(__file__), "cnn.relay")
    text = "// A small residual CNN: two conv2d + bias_add + relu blocks, a skip connection\n" \
           "// and a scale.  Weights are in the resource section at the end.\n" + print_module(m)
    with open(out, "w") as fh:
        fh.write(text)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
