"""ONNX MaxPool's Indices (nn.max_pool_argmax) and MaxUnpool, against
torch's max_pool2d(return_indices=True) and max_unpool2d."""

import numpy as np
import pytest

from tvmd.runtime.build import build

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")


def pool_unpool_model(shape, kernel, stride, pads):
    from onnx import TensorProto, helper
    nodes = [helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=kernel, strides=stride, pads=pads),
             helper.make_node("MaxUnpool", ["y", "i"], ["u"], kernel_shape=kernel, strides=stride, pads=pads)]
    graph = helper.make_graph(nodes, "pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(n, t, None)
                               for n, t in (("y", TensorProto.FLOAT), ("i", TensorProto.INT64), ("u", TensorProto.FLOAT))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])


# sizes that unpooling rebuilds exactly (ONNX's MaxUnpool scatters into the
# size it infers, and torch into the original: they agree where those are equal)
@pytest.mark.parametrize("hw,kernel,stride,pad", [((8, 8), (2, 2), (2, 2), (0, 0)), ((7, 7), (3, 3), (2, 2), (1, 1)),
                                                  ((7, 8), (3, 2), (1, 2), (1, 0))])
def test_indices_and_unpool_match_torch(hw, kernel, stride, pad):
    from tvmd.frontend.onnx import from_onnx
    shape = (2, 3) + hw
    x = np.random.default_rng(0).permutation(np.prod(shape)).reshape(shape).astype(np.float32)   # distinct values
    model = pool_unpool_model(list(shape), list(kernel), list(stride), list(pad) * 2)
    y, i, u = build(from_onnx(model)[0], fallback=True).run(x)
    ty, ti = torch.nn.functional.max_pool2d(torch.from_numpy(x), kernel, stride, pad, return_indices=True)
    plane = shape[2] * shape[3]
    offsets = (np.arange(shape[0] * shape[1]) * plane).reshape(shape[0], shape[1], 1, 1)
    np.testing.assert_array_equal(y, ty.numpy())
    np.testing.assert_array_equal(i - offsets, ti.numpy())        # ONNX counts in the whole tensor
    tu = torch.nn.functional.max_unpool2d(ty, ti, kernel, stride, pad)
    np.testing.assert_array_equal(u, tu.numpy())
