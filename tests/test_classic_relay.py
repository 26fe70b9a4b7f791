"""Classic TVM's Relay Python API (tvmd.classic.relay): scripts written for
tvm run with ``import tvmd as tvm``; results checked against numpy,
onnxruntime and torch."""

import numpy as np
import pytest

import tvmd as tvm
from tvmd import relay
from tvmd.contrib import graph_executor

RNG = np.random.default_rng(0)


def conv2d_ref(x, w, pad):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = np.lib.stride_tricks.sliding_window_view(xp, w.shape[2:], axis=(2, 3))   # N C H W kh kw
    return np.einsum("nchwij,ocij->nohw", win, w)


def small_cnn():
    x = relay.var("data", shape=(1, 3, 16, 16))
    w = relay.var("w", shape=(8, 3, 3, 3))
    b = relay.var("b", shape=(8,))
    y = relay.nn.conv2d(x, w, padding=(1, 1), channels=8, kernel_size=(3, 3))
    y = relay.nn.relu(relay.nn.bias_add(y, b))
    y = relay.nn.max_pool2d(y, pool_size=(2, 2), strides=(2, 2))
    y = relay.nn.batch_flatten(relay.nn.global_avg_pool2d(y))
    return relay.Function(relay.analysis.free_vars(y), relay.nn.softmax(y * relay.const(2.0)))


def small_cnn_ref(data, w, b):
    y = np.maximum(conv2d_ref(data, w, 1) + b[None, :, None, None], 0)
    y = y.reshape(1, 8, 8, 2, 8, 2).max(axis=(3, 5)).mean(axis=(2, 3)) * 2.0
    e = np.exp(y - y.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_a_classic_relay_script_builds_and_runs():
    mod = tvm.IRModule.from_expr(small_cnn())
    text = str(mod)
    assert "relay.func @main(%data: tensor<1x3x16x16xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>)" in text
    assert "dense<2.0> : tensor<f32>" in text   # relay.const(2.0) is a float32 scalar
    params = {"w": RNG.standard_normal((8, 3, 3, 3)).astype("float32"), "b": RNG.standard_normal(8).astype("float32")}
    seq = tvm.transform.Sequential([relay.transform.FoldConstant(),
                                    relay.transform.ConvertLayout({"nn.conv2d": ["NHWC", "default"]})])
    with tvm.transform.PassContext(opt_level=3):
        converted = seq(mod)
        lib = relay.build(converted, target="llvm", params=params)
    assert 'data_layout = "NHWC"' in str(converted) and 'data_layout = "NHWC"' not in str(mod)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    data = RNG.standard_normal((1, 3, 16, 16)).astype("float32")
    m.set_input("data", data)
    m.run()
    assert m.get_num_outputs() == 1
    np.testing.assert_allclose(m.get_output(0).numpy(), small_cnn_ref(data, **params), rtol=1e-5, atol=1e-6)


def test_fuse_ops_and_disabled_passes():
    mod = tvm.IRModule.from_expr(small_cnn())
    fused = relay.transform.FuseOps(fuse_opt_level=2)(mod)
    assert "attributes {primitive}" in str(fused) and "primitive" not in str(mod)
    with tvm.transform.PassContext(opt_level=3, disabled_pass=["FuseOps"]):
        assert relay.transform.FuseOps()(mod) is mod


def test_positional_attributes_follow_tvms_order_and_tuples():
    x = relay.var("x", shape=(2, 6))
    parts = relay.split(x, 3, 1)                       # indices_or_sections, axis
    y = relay.concatenate([parts[2], parts[0]], 1)
    z = relay.sum(relay.reshape(y, (4, 2)), 0, True)  # axis, keepdims
    ev = relay.create_executor("graph", mod=tvm.IRModule.from_expr(relay.Function([x], relay.Tuple([y, z]))))
    a = RNG.standard_normal((2, 6)).astype("float32")
    got_y, got_z = ev.evaluate()(a)
    want_y = np.concatenate([a[:, 4:], a[:, :2]], axis=1)
    np.testing.assert_allclose(got_y.numpy(), want_y, rtol=1e-6)
    np.testing.assert_allclose(got_z.numpy(), want_y.reshape(4, 2).sum(0, keepdims=True), rtol=1e-5)


def test_scope_builder_lets_and_if_else():
    """The classic ScopeBuilder: lets become SSA values, if/else a relay.if
    whose branches read the lets; run for both conditions against numpy."""
    x = relay.var("x", shape=(3, 4))
    flag = relay.var("flag", shape=(), dtype="bool")
    sb = relay.ScopeBuilder()
    t = sb.let("t", relay.add(x, relay.const(1.0)))
    u = sb.let(("u", relay.TensorType((3, 4), "float32")), t * t)
    with sb.if_scope(flag):
        sb.ret(relay.nn.relu(u - relay.const(2.0)))
    with sb.else_scope():
        inner = relay.ScopeBuilder()
        v = inner.let("v", relay.negative(t))
        inner.ret(v + u)
        sb.ret(inner.get())
    func = relay.Function([x, flag], sb.get())
    text = str(tvm.IRModule.from_expr(func))
    assert " = if %flag : tensor<3x4xf32> {" in text and "yield" in text
    ev = relay.create_executor("graph", mod=tvm.IRModule.from_expr(func))
    a = RNG.standard_normal((3, 4)).astype("float32")
    for f in (True, False):
        got = ev.evaluate()(a, np.array(f))
        want = np.maximum((a + 1) ** 2 - 2, 0) if f else -(a + 1) + (a + 1) ** 2
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)
    with pytest.raises(tvm.TVMError, match="else_scope"):
        sb2 = relay.ScopeBuilder()
        with sb2.if_scope(flag):
            sb2.ret(x)
        sb2.get()
    with pytest.raises(tvm.TVMError, match="ret"):
        relay.ScopeBuilder().get()


def test_errors_point_at_the_script():
    x = relay.var("x", shape=(2, 3))
    y = relay.var("y", shape=(4, 5))
    bad = relay.add(x, y)   # the line the error points at
    with pytest.raises(tvm.TVMError) as e:
        tvm.IRModule.from_expr(relay.Function([x, y], bad))
    assert "test_classic_relay.py" in str(e.value) and "the line the error points at" in str(e.value)
    with pytest.raises(tvm.TVMError, match="not its parameters: y"):
        tvm.IRModule.from_expr(relay.Function([x], bad))
    with pytest.raises(tvm.TVMError, match="no attribute 'axes'"):
        tvm.IRModule.from_expr(relay.Function([x], relay.nn.softmax(x, axes=1)))
    with pytest.raises(tvm.TVMError, match="not among @main's parameters: nope"):
        relay.build(tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x))), params={"nope": np.zeros(1)})


def test_from_onnx_with_params_matches_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    from tvmd.testing.onnx_zoo import ZOO
    model, feeds = ZOO["resnet18"](small=True)
    (name, x), = feeds.items()
    mod, params = relay.frontend.from_onnx(model, shape={name: x.shape})
    assert params and all(hasattr(v, "numpy") for v in params.values())   # TVM keeps the weights apart
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(**{name: x})
    want = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)


def test_from_pytorch_traced_matches_torch():
    torch = pytest.importorskip("torch")
    import warnings
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 8 * 8, 5)).eval()
    x = torch.randn(1, 3, 8, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(model, x)
    mod, params = relay.frontend.from_pytorch(traced, [("input0", (1, 3, 8, 8))])
    lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.set_input(0, x.numpy())
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_keyword_operands_take_their_declared_places():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    text = str(relay.Function([x, w], relay.nn.conv2d(weight=w, data=x, padding=(1, 1))))
    assert "nn.conv2d(%x, %w)" in text
    with pytest.raises(TypeError, match="operand 'data' twice"):
        relay.nn.conv2d(x, w, data=x)


def test_closures_capture_return_and_take_functions():
    """Nested relay.Functions are closures (relay.fn): one captures the
    outer parameter, one takes a function value (a FuncType parameter) and
    calls it, one returns a closure; run against numpy."""
    t = relay.TensorType((3,), "float32")
    x = relay.var("x", shape=(3,))
    y = relay.var("y", shape=(3,))
    z = relay.var("z", shape=(3,))
    g = relay.var("g", relay.FuncType([t], t))
    add_x = relay.Function([y], relay.add(x, y))                     # captures x
    twice = relay.Function([g, z], relay.Call(g, [relay.Call(g, [z])]))
    a = relay.var("a", shape=(3,))
    make_scale = relay.Function([a], relay.Function([z], relay.multiply(z, a)))   # returns a closure
    f, tw, ms = relay.var("f"), relay.var("twice"), relay.var("make_scale")
    body = relay.Let(f, add_x, relay.Let(tw, twice, relay.Let(ms, make_scale,
                     relay.Call(relay.Call(ms, [x]), [relay.Call(tw, [f, relay.negative(x)])]))))
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    text = str(mod)
    assert text.count("= fn (") == 4 and "call %" in text
    assert "(tensor<3xf32>) -> tensor<3xf32>" in text
    ev = relay.create_executor("graph", mod=mod)
    v = RNG.standard_normal(3).astype("float32")
    np.testing.assert_allclose(ev.evaluate()(v).numpy(), (-v + v + v) * v, rtol=1e-6)


def test_closure_mistakes_are_clear_errors():
    x = relay.var("x", shape=(3,))
    untyped = relay.var("p")
    with pytest.raises(tvm.TVMError, match="parameter 'p' has no type"):
        tvm.IRModule.from_expr(relay.Function([x], relay.Call(relay.Function([untyped], x), [x])))
    f = relay.var("f", relay.TensorType((2,), "float32"))
    with pytest.raises(tvm.TVMError, match="'f' is annotated tensor<2xf32> but its value has type"):
        tvm.IRModule.from_expr(relay.Function([x], relay.Let(f, relay.negative(x), x)))
    y = relay.var("y", shape=(3,))
    with pytest.raises(tvm.TVMError) as e:
        tvm.IRModule.from_expr(relay.Function([x, y], relay.Call(y, [x])))   # calls a tensor
    assert "not a function" in str(e.value) and "test_classic_relay.py" in str(e.value)
    with pytest.raises(tvm.TVMError) as e:
        tvm.IRModule.from_expr(relay.Function([x], relay.Call(relay.Function([y], y), [x, x])))
    assert "passes 2 argument(s)" in str(e.value)
