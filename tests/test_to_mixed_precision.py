"""--to-mixed-precision: where the casts go (allow / follow / deny lists,
float32 sums, the signature kept) and what the compiled model computes,
against numpy emulating the same roundings (float16 natively, bfloat16
on the float32 bits) and, loosely, against float32."""

import numpy as np
import pytest

from tvmd.ir.pass_manager import PassContext
from tvmd.ir.registry import get_pass_class
from tvmd.parser import parse_module
from tvmd.runtime.build import build
from tvmd.testing.bfloat16 import rounded as bf16

MLP = """relay.func @main(%x: tensor<8x64xf32>) -> tensor<8x16xf32> {
  %w1 = constant dense<0.0> : tensor<32x64xf32>
  %b1 = constant dense<0.0> : tensor<32xf32>
  %w2 = constant dense<0.0> : tensor<16x32xf32>
  %d1 = nn.dense(%x, %w1) : tensor<8x32xf32>
  %a1 = nn.bias_add(%d1, %b1) : tensor<8x32xf32>
  %r1 = nn.relu(%a1) : tensor<8x32xf32>
  %d2 = nn.dense(%r1, %w2) : tensor<8x16xf32>
  %s = nn.softmax(%d2) : tensor<8x16xf32>
  return %s
}
"""


def weights(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((32, 64)).astype(np.float32) * 0.2, rng.standard_normal(32).astype(np.float32),
            rng.standard_normal((16, 32)).astype(np.float32) * 0.3)


def module(options=""):
    from tvmd.ir.attributes import DenseAttr
    m = parse_module(MLP, "mlp.relay")
    consts = [op for op in m.lookup("main").body.ops if op.name == "relay.constant"]
    for c, v in zip(consts, weights()):
        c.attributes["value"] = DenseAttr(v, c.results[0].type)
    kwargs = dict(kv.split("=") for kv in options.split()) if options else {}
    for k in ("allow", "deny"):
        if k in kwargs:
            kwargs[k] = kwargs[k].split(",")
    get_pass_class("to-mixed-precision")(**kwargs).run(m, PassContext())
    return m


def softmax(z):
    z = z.astype(np.float64)
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def emulated(x, low):
    """The mixed-precision model in numpy: products of rounded operands
    summed in float32, their results rounded, the bias add and relu in the
    low type, softmax in float32."""
    w1, b1, w2 = weights()
    rnd = (lambda a: np.asarray(a, np.float32).astype(np.float16).astype(np.float32)) if low == "float16" else bf16
    h = rnd(rnd(rnd(x) @ rnd(w1).T))                 # the dense's sums rounded down
    h = np.maximum(rnd(h + rnd(b1)), 0)              # bias add and relu in the low type
    return softmax(rnd(h) @ rnd(w2).T)               # the second dense's float32 sums go to softmax


def test_the_casts_sit_around_the_products():
    text = str(module())
    assert 'nn.dense(%0, %1) {out_dtype = "float32"} : tensor<8x32xf32>' in text, text
    assert "nn.bias_add(%2, %3) : tensor<8x32xf16>" in text and "nn.relu(%a1) : tensor<8x32xf16>" in text, text
    # softmax is denied: the second product's float32 sums feed it as they are
    assert "%s = nn.softmax(%d2) : tensor<8x16xf32>" in text, text
    assert "-> tensor<8x16xf32>" in text


def test_deny_and_allow_replace_the_lists():
    text = str(module("deny=nn.relu"))
    assert "nn.relu(%4) : tensor<8x32xf32>" in text, text
    text = str(module("allow=nn.conv2d"))
    assert "xf16" not in text and "out_dtype" not in text, text


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_compiled_equals_the_emulation(low):
    m = module(f"dtype={low}")
    get_pass_class("fold-constant")().run(m, PassContext())
    x = np.random.default_rng(3).standard_normal((8, 64)).astype(np.float32)
    got = build(m, fallback=False).run(x)
    np.testing.assert_allclose(got, emulated(x, low), rtol=2e-3, atol=1e-5)
    w1, b1, w2 = weights()
    full = softmax(np.maximum(x.astype(np.float64) @ w1.T + b1, 0) @ w2.T)
    np.testing.assert_allclose(got, full, atol=0.02 if low == "float16" else 0.1)


def test_a_bad_dtype_is_an_option_error():
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        get_pass_class("to-mixed-precision")(dtype="int8").validate()


SPLIT = """relay.func @main(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  %w = constant dense<0.0> : tensor<24x16xf32>
  %d = nn.dense(%x, %w) : tensor<4x24xf32>
  %t = split(%d) {indices_or_sections = 3, axis = 1} : tuple<tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>>
  %a = get_item(%t) {index = 0} : tensor<4x8xf32>
  %b = get_item(%t) {index = 2} : tensor<4x8xf32>
  %s = add(%a, %b) : tensor<4x8xf32>
  return %s
}
"""


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_the_elements_of_a_split_product_follow_it(dtype):
    """A split of a product's (low-precision) result: its get_items take
    the low type too.  They kept float32 types once, so the kernels read
    bf16 bits as float32 (a GPT-2 decoder gave NaN logits)."""
    from tvmd.ir.attributes import DenseAttr
    w = np.random.default_rng(4).standard_normal((24, 16)).astype(np.float32)
    m = parse_module(SPLIT)
    c = next(op for op in m.lookup("main").body.ops if op.name == "relay.constant")
    c.attributes["value"] = DenseAttr(w, c.results[0].type)
    get_pass_class("to-mixed-precision")(dtype=dtype).run(m, PassContext())
    m.verify()
    low = "bf16" if dtype == "bfloat16" else "f16"
    assert f"get_item(%t) {{index = 0}} : tensor<4x8x{low}>" in str(m), str(m)
    x = np.random.default_rng(5).standard_normal((4, 16)).astype(np.float32)
    rnd = bf16 if dtype == "bfloat16" else (lambda a: np.asarray(a, np.float32).astype(np.float16).astype(np.float32))
    d = rnd(rnd(x).astype(np.float64) @ rnd(w).astype(np.float64).T)
    np.testing.assert_allclose(build(m, fallback=False).run(x), rnd(d[:, :8] + d[:, 16:]), rtol=1e-2, atol=1e-2)
