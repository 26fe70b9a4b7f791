"""nn.deformable_conv2d (dialects/relay/ops/deformable_conv.py) against
torchvision's deform_conv2d: offsets reaching outside the input, groups and
offset groups, strides, dilations, padding, with and without a mask, through
ONNX's DeformConv and the backend."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
tvops = pytest.importorskip("torchvision.ops")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as oh  # noqa: E402

from tvmd.frontend import onnx_backend  # noqa: E402

CASES = [  # N, C, H, W, O, k, stride, pad, dilation, groups, offset groups, mask
    (1, 2, 6, 7, 3, 3, 1, 1, 1, 1, 1, False),
    (2, 4, 9, 8, 6, 3, 2, 1, 1, 2, 2, True),
    (1, 6, 7, 7, 4, 2, 1, 0, 2, 2, 3, True),
    (1, 3, 5, 6, 2, 3, (2, 1), (0, 2), (1, 2), 1, 1, True),
]


@pytest.mark.parametrize("case", CASES)
def test_matches_torchvision(case):
    n, c, h, w, o, k, stride, pad, dil, groups, og, with_mask = case
    pair = lambda v: (v, v) if isinstance(v, int) else tuple(v)  # noqa: E731
    (sh, sw), (ph, pw), (dh, dw) = pair(stride), pair(pad), pair(dil)
    oh_ = (h + 2 * ph - dh * (k - 1) - 1) // sh + 1
    ow_ = (w + 2 * pw - dw * (k - 1) - 1) // sw + 1
    rng = np.random.default_rng(CASES.index(case))
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((o, c // groups, k, k)).astype(np.float32)
    offset = (rng.standard_normal((n, og * k * k * 2, oh_, ow_)) * 2.5).astype(np.float32)   # some land outside
    mask = rng.uniform(0, 1, (n, og * k * k, oh_, ow_)).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    want = tvops.deform_conv2d(torch.from_numpy(x), torch.from_numpy(offset), torch.from_numpy(wt),
                               torch.from_numpy(bias), stride=(sh, sw), padding=(ph, pw), dilation=(dh, dw),
                               mask=torch.from_numpy(mask) if with_mask else None).numpy()
    ins = ["x", "w", "off", "b"] + (["m"] if with_mask else [])
    node = oh.make_node("DeformConv", ins, ["y"], strides=[sh, sw], pads=[ph, pw, ph, pw],
                        dilations=[dh, dw], group=groups, offset_group=og)
    feeds = {"x": x, "w": wt, "off": offset, "b": bias, "m": mask}
    g = oh.make_graph([node], "g", [oh.make_tensor_value_info(i, TP.FLOAT, feeds[i].shape) for i in ins],
                      [oh.make_tensor_value_info("y", TP.FLOAT, None)])
    model = oh.make_model(g, opset_imports=[oh.make_opsetid("", 19)])
    got = onnx_backend.prepare(model).run([feeds[i] for i in ins])[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
