"""Every relay operator of the op families, as data: its fusion pattern
(TVM's choices), its layout rule, its attribute declarations (defaults
pass their own checks; no attribute shadows a method), a docstring, and a
text round trip of one use."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import relay_ops_helpers  # noqa: E402,F401  (registers the ops)

from tvmd.dialects.relay.ops.base import OpPattern, RelayOp  # noqa: E402
from tvmd.ir.core import OP_CLASSES, REQUIRED  # noqa: E402
from tvmd.ir.diagnostics import DiagnosticError  # noqa: E402
from tvmd.ir.printer import print_module  # noqa: E402
from tvmd.parser import parse_module  # noqa: E402

FAMILIES = ("elemwise", "nn", "conv", "pool", "norm", "reduce", "transform", "tensor", "image")
OPS = sorted(name for name, cls in OP_CLASSES.items()
             if name.startswith("relay.") and issubclass(cls, RelayOp)
             and cls.__module__.rsplit(".", 1)[-1] in FAMILIES)

E, B, I, R, O, X = (OpPattern.ELEMWISE, OpPattern.BROADCAST, OpPattern.INJECTIVE, OpPattern.COMM_REDUCE,
                    OpPattern.OUT_ELEMWISE_FUSABLE, OpPattern.OPAQUE)
# TVM's TOpPattern for the ops whose kind is not the family's obvious one
TVM_PATTERNS = {
    "add": B, "where": B, "equal": B, "left_shift": B, "nn.prelu": B, "nn.bias_add": B, "maximum": B,
    "exp": E, "nn.relu": E, "clip": E, "cast": E, "cast_like": E, "zeros": E, "ones": E, "full": E, "full_like": E,
    "zeros_like": E, "copy": E, "nn.leaky_relu": E,
    "reshape": I, "transpose": I, "squeeze": I, "concatenate": I, "split": I, "stack": I, "strided_slice": I,
    "take": I, "gather": I, "gather_nd": I, "reverse": I, "layout_transform": I, "nn.pad": I,
    "nn.batch_flatten": I, "image.resize2d": I, "nn.upsampling": I, "nn.depth_to_space": I, "ndarray_size": I,
    "expand_dims": B, "broadcast_to": B, "tile": B, "repeat": B,
    "sum": R, "mean": R, "max": R, "argmax": R, "variance": R, "std": R,
    "nn.conv2d": O, "nn.conv2d_transpose": O, "nn.dense": O, "nn.matmul": O, "nn.contrib_dense_pack": O, "nn.batch_matmul": O,
    "nn.contrib_conv2d_pack": O,
    "nn.max_pool2d": O, "nn.avg_pool2d": O, "nn.global_avg_pool2d": O, "nn.adaptive_avg_pool2d": O,
    "one_hot": O, "nn.l2_normalize": O,
    "nn.softmax": X, "nn.log_softmax": X, "nn.batch_norm": X, "nn.layer_norm": X, "nn.dropout": X, "nn.lrn": X,
    "shape_of": X, "arange": X, "arange_like": X, "scatter_elements": X, "scatter_nd": X, "argwhere": X, "topk": X, "sort": X,
    "argsort": X, "cumsum": X, "einsum": I, "reverse_sequence": I,
}


def test_the_op_set_is_complete():
    names = {n[len("relay."):] for n in OPS}
    wanted = set(TVM_PATTERNS) | {
        "subtract", "multiply", "divide", "power", "minimum", "floor_divide", "floor_mod", "mod", "negative", "abs",
        "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "floor", "ceil", "round", "sign", "not_equal", "less",
        "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_not", "logical_xor",
        "nn.gelu", "right_shift", "bitwise_and", "ones_like", "nn.conv1d", "nn.conv3d", "nn.global_max_pool2d",
        "nn.adaptive_max_pool2d", "nn.group_norm", "nn.instance_norm", "min", "prod", "argmin",
        "image.resize1d", "image.resize3d", "nn.space_to_depth"}
    assert wanted <= names, sorted(wanted - names)


@pytest.mark.parametrize("name", sorted(TVM_PATTERNS))
def test_pattern_is_tvms(name):
    assert OP_CLASSES["relay." + name].PATTERN == TVM_PATTERNS[name]


@pytest.mark.parametrize("name", OPS)
def test_declaration(name):
    cls = OP_CLASSES[name]
    assert cls.PATTERN in OpPattern
    assert cls.LAYOUT in ("elemwise", "broadcast", "axis", "layout", "opaque")
    if cls.LAYOUT == "layout":
        assert cls.LAYOUT_ATTRS and all(a in cls.ATTRS for a in cls.LAYOUT_ATTRS)
    for a in cls.AXIS_ATTRS:
        assert a in cls.ATTRS
    assert (cls.__doc__ or type(cls).__doc__) or __import__(cls.__module__, fromlist=["x"]).__doc__
    for key, spec in cls.ATTRS.items():
        if spec.default is not REQUIRED and spec.default is not None:
            assert spec.kind.check(spec.default) is None, (key, spec.default)
        # an attribute's accessor must not shadow a method of a base class
        for base in cls.__mro__[1:]:
            v = base.__dict__.get(key.replace("-", "_"))
            assert v is None or isinstance(v, property), f"{name}: attribute '{key}' shadows {base.__name__}.{key}"


# one use of each op, in text, without result types: they are inferred and printed
USES = {
    "nn.conv2d_transpose": ("(%x4, %w4)", "{strides = [2, 2], output_padding = [1, 1]}"),
    "nn.batch_norm": ("(%x4, %c, %c, %c, %c)", ""),
    "nn.layer_norm": ("(%x4, %c, %c)", "{axis = 1}"),
    "nn.group_norm": ("(%x4, %c, %c)", "{num_groups = 2}"),
    "nn.instance_norm": ("(%x4, %c, %c)", ""),
    "nn.max_pool2d": ("(%x4)", "{pool_size = [2, 2], ceil_mode = true}"),
    "nn.avg_pool2d": ("(%x4)", "{pool_size = [3, 3], padding = [1, 1, 1, 1], count_include_pad = true}"),
    "image.resize2d": ("(%x4)", '{size = [8, 8], method = "cubic"}'),
    "nn.pad": ("(%x4)", '{pad_width = [[0, 0], [0, 0], [1, 1], [2, 2]], pad_mode = "edge"}'),
    "split": ("(%x4)", "{indices_or_sections = [1, 3], axis = 3}"),
    "strided_slice": ("(%x4)", "{begin = [0, 1], end = [1, 3], strides = [1, 2]}"),
    "reshape": ("(%x4)", "{newshape = [0, -1, 4]}"),
    "transpose": ("(%x4)", "{axes = [0, 2, 3, 1]}"),
    "concatenate": ("(%x4, %x4, %x4)", "{axis = 1}"),
    "sum": ("(%x4)", "{axis = [1, 2], keepdims = true}"),
    "variance": ("(%x4)", "{axis = -1, unbiased = true}"),
    "argmax": ("(%x4)", "{axis = 1, select_last_index = true}"),
    "clip": ("(%x4)", "{a_min = -1.0, a_max = 1.0}"),
    "cast": ("(%x4)", '{dtype = "float16"}'),
    "nn.gelu": ("(%x4)", '{approximate = "tanh"}'),
    "take": ("(%x4, %i)", '{axis = 3, mode = "wrap"}'),
    "one_hot": ("(%i, %s, %s)", "{depth = 5}"),
    "arange": ("()", "{stop = 4.0}"),
}


@pytest.mark.parametrize("name", sorted(USES))
def test_text_round_trip(name):
    args, attrs = USES[name]
    src = f"""relay.func @f(%x4: tensor<1x4x4x4xf32>, %w4: tensor<4x2x3x3xf32>, %c: tensor<4xf32>,
             %i: tensor<2xi32>, %s: tensor<f32>) {{
  %r = {name[len(''):]}{args} {attrs}
  return %r
}}"""
    text = print_module(parse_module(src))
    assert " : tensor<" in text.splitlines()[1] or " : tuple<" in text.splitlines()[1]
    assert print_module(parse_module(text)) == text
    for part in attrs.strip("{}").split(", "):
        if part:
            assert part.split(" = ")[0] in text


# -- every op: compute agrees with the type relation; dynamic dims; robustness --------------

def _sample_types():
    """One valid use of every op: operand types (numpy dtypes) and attributes."""
    from tvmd.dialects.relay.ops.elemwise import BinaryBroadcastOp, UnaryOp
    f = np.float32
    s = {}
    for name in OPS:
        cls = OP_CLASSES[name]
        short = name[len("relay."):]
        if issubclass(cls, BinaryBroadcastOp):
            dt = np.int32 if cls.KIND == "int" else np.bool_ if short.startswith("logical") else f
            s[short] = ([((2, 1, 4), dt), ((3, 1), dt)], {})
        elif issubclass(cls, UnaryOp) and not cls.ATTRS:
            dt = np.int32 if cls.KIND == "int" else np.bool_ if short == "logical_not" else f
            s[short] = ([((2, 3), dt)], {})
    x4, c = ((1, 4, 6, 6), f), ((4,), f)
    s.update({
        "clip": ([((2, 3), f)], {"a_min": -1.0, "a_max": 1.0}),
        "cast": ([((2, 3), f)], {"dtype": "int32"}),
        "reinterpret": ([((2, 3), f)], {"dtype": "int32"}),
        "cast_like": ([((2, 3), f), ((1,), np.int8)], {}),
        "nn.leaky_relu": ([((2, 3), f)], {}), "nn.gelu": ([((2, 3), f)], {}),
        "nn.prelu": ([x4, c], {}), "where": ([((2, 1), np.bool_), ((3,), f), ((2, 3), f)], {}),
        "full_like": ([((2, 3), f), ((), f)], {}),
        "nn.dense": ([((2, 5), f), ((3, 5), f)], {}), "nn.matmul": ([((2, 5), f), ((5, 3), f)], {}),
        "nn.contrib_dense_pack": ([((2, 5), f), ((2, 5, 4), f)], {"weight_layout": "NC4n"}),
        "nn.contrib_conv2d_pack": ([((1, 5, 6, 8), np.uint8), ((1, 3, 3, 2, 4), np.int32)],
                                   {"kernel_layout": "OHWI4o4i"}),
        "nn.batch_matmul": ([((2, 3, 5), f), ((2, 4, 5), f)], {}), "nn.bias_add": ([x4, c], {}),
        "nn.softmax": ([x4], {}), "nn.log_softmax": ([x4], {}), "nn.dropout": ([x4], {}),
        "nn.pad": ([((2, 3), f)], {"pad_width": [[1, 0], [0, 2]]}), "nn.lrn": ([x4], {}),
        "nn.l2_normalize": ([x4], {"eps": 1e-6}), "nn.batch_flatten": ([x4], {}),
        "nn.depth_to_space": ([x4], {"block_size": 2}), "nn.space_to_depth": ([x4], {"block_size": 2}),
        "nn.conv1d": ([((1, 4, 6), f), ((2, 4, 3), f)], {}), "nn.conv2d": ([x4, ((2, 4, 3, 3), f)], {}),
        "nn.conv3d": ([((1, 4, 3, 4, 5), f), ((2, 4, 1, 2, 3), f)], {}),
        "nn.conv1d_transpose": ([((1, 4, 6), f), ((4, 2, 3), f)], {}),
        "nn.conv2d_transpose": ([x4, ((4, 2, 3, 3), f)], {"strides": [2, 2]}),
        "nn.conv3d_transpose": ([((1, 4, 3, 4, 5), f), ((4, 2, 1, 2, 3), f)], {}),
        "nn.batch_norm": ([x4, c, c, c, c], {}), "nn.layer_norm": ([x4, ((6,), f), ((6,), f)], {}),
        "nn.group_norm": ([x4, c, c], {"num_groups": 2}), "nn.instance_norm": ([x4, c, c], {}),
        "nn.upsampling": ([x4], {"scale_h": 2.0}), "nn.upsampling3d": ([((1, 2, 2, 3, 4), f)], {"scale_d": 2.0}),
        "image.resize1d": ([((1, 2, 5), f)], {"size": [3]}), "image.resize2d": ([x4], {"size": [3, 8]}),
        "image.resize3d": ([((1, 2, 2, 3, 4), f)], {"size": [3, 3, 3]}),
        "reshape": ([x4], {"newshape": [0, -1]}), "reshape_like": ([((2, 3), f), ((3, 2), f)], {}),
        "transpose": ([x4], {}), "squeeze": ([x4], {"axis": [0]}), "expand_dims": ([x4], {"axis": 1}),
        "concatenate": ([x4, x4], {}), "stack": ([x4, x4], {}), "split": ([x4], {"indices_or_sections": 2, "axis": 1}),
        "strided_slice": ([x4], {"begin": [0, 1], "end": [1, 3]}),
        "broadcast_to": ([((3, 1), f)], {"shape": [2, 3, 4]}), "broadcast_to_like": ([((3, 1), f), ((3, 4), f)], {}),
        "tile": ([x4], {"reps": [2]}), "repeat": ([x4], {"repeats": 2, "axis": 1}), "reverse": ([x4], {"axis": 1}),
        "layout_transform": ([x4], {"src_layout": "NCHW", "dst_layout": "NHWC"}),
        "zeros": ([], {"shape": [2, 3]}), "ones": ([], {"shape": [2]}), "full": ([((), f)], {"shape": [2]}),
        "arange": ([], {"stop": 3.0}), "arange_like": ([x4], {"axis": 1, "dtype": "int64"}), "shape_of": ([x4], {}), "ndarray_size": ([x4], {}),
        "take": ([x4, ((2,), np.int32)], {"axis": 1}), "gather": ([((3, 4), f), ((3, 2), np.int32)], {"axis": 1}),
        "gather_nd": ([((3, 4), f), ((1, 2), np.int32)], {}),
        "scatter_elements": ([((3, 4), f), ((3, 2), np.int32), ((3, 2), f)], {"axis": 1}),
        "one_hot": ([((3,), np.int32), ((), f), ((), f)], {"depth": 4}),
        "scatter_nd": ([((3, 4), f), ((1, 2), np.int32), ((2, 4), f)], {}),
        "argwhere": ([((3, 4), np.bool_)], {}), "topk": ([((3, 4), f)], {"k": 2}),
        "sort": ([((3, 4), f)], {}), "argsort": ([((3, 4), f)], {}), "cumsum": ([((3, 4), f)], {"axis": 1}),
        "cumprod": ([((3, 4), np.int32)], {}), "einsum": ([((2, 3), f), ((3, 4), f)], {"equation": "ij,jk->ik"}),
        "reverse_sequence": ([((3, 4), f), ((3,), np.int32)], {}),
    })
    for name in OPS:
        cls = OP_CLASSES[name]
        short = name[len("relay."):]
        if short in s:
            continue
        from tvmd.dialects.relay.ops.pool import AdaptivePoolOp, WindowPoolOp
        from tvmd.dialects.relay.ops.reduce import ReduceOp
        if issubclass(cls, WindowPoolOp):
            s[short] = ([((1, 2) + (5,) * cls.NDIM, f)], {"pool_size": [2] * cls.NDIM})
        elif issubclass(cls, AdaptivePoolOp):
            s[short] = ([((1, 2) + (5,) * cls.NDIM, f)], {})
        elif issubclass(cls, ReduceOp):
            s[short] = ([((2, 3, 4), np.bool_ if cls.KIND == "bool" else f)], {"axis": 1})
    return s


SAMPLES = _sample_types()


def test_every_op_has_a_sample():
    assert sorted(n[len("relay."):] for n in OPS) == sorted(SAMPLES)


def _types(specs):
    from tvmd.ir import types as T
    return [T.TensorType(shape, T.from_numpy_dtype(np.dtype(dt))) for shape, dt in specs]


def _arrays(specs):
    out = []
    for shape, dt in specs:
        if np.dtype(dt) == np.bool_:
            out.append(relay_ops_helpers.RNG.random(shape) > 0.5)
        elif np.issubdtype(np.dtype(dt), np.integer):
            out.append(relay_ops_helpers.RNG.integers(0, 2, size=shape).astype(dt))
        else:
            out.append(relay_ops_helpers.RNG.uniform(0.5, 1.5, size=shape).astype(dt))
    return out


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_compute_agrees_with_the_type(name):
    specs, attrs = SAMPLES[name]
    op = relay_ops_helpers.build(name, _types(specs), **attrs)
    op.verify()
    relay_ops_helpers.check(op.compute(*_arrays(specs)), op.results[0].type)


def _compatible(dyn, static):
    from tvmd.ir import types as T
    if isinstance(static, T.TupleType):
        return isinstance(dyn, T.TupleType) and len(dyn.types) == len(static.types) and all(
            _compatible(a, b) for a, b in zip(dyn.types, static.types))
    return dyn.element_type is static.element_type and dyn.rank == static.rank and all(
        a is None or a == b for a, b in zip(dyn.shape, static.shape))


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_dynamic_dims_keep_a_compatible_type(name):
    """Each operand dimension made `?` in turn: the type is still inferred,
    and agrees with the static one wherever it stays static."""
    from tvmd.ir import types as T
    specs, attrs = SAMPLES[name]
    types = _types(specs)
    static = relay_ops_helpers.infer(name, types, **attrs)
    for k, t in enumerate(types):
        for d in range(t.rank):
            shape = list(t.shape)
            shape[d] = None
            dyn_types = types[:k] + [T.TensorType(shape, t.element_type)] + types[k + 1:]
            try:
                dyn = relay_ops_helpers.infer(name, dyn_types, **attrs)
            except DiagnosticError as e:   # only where the op needs the size (documented)
                assert "dynamic" in str(e), (name, k, d, e)
                continue
            assert _compatible(dyn, static), (name, k, d, dyn, static)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_bad_operands_are_diagnostics_never_crashes(name):
    """Operand types of every rank, dtype and size, and a tuple: the type
    relation accepts them or reports an error at the op, never a Python
    exception."""
    from tvmd.ir import types as T
    specs, attrs = SAMPLES[name]
    rng = np.random.default_rng(len(name))
    elems = [T.f32, T.i32, T.i1, T.f16]
    n = max(len(specs), 1)
    for trial in range(40):
        types = []
        for _ in range(len(specs)):
            if rng.random() < 0.05:
                types.append(T.TupleType([T.TensorType((2,), T.f32)]))
                continue
            rank = int(rng.integers(0, 6))
            shape = [None if rng.random() < 0.15 else int(rng.integers(0, 5)) for _ in range(rank)]
            types.append(T.TensorType(shape, elems[int(rng.integers(0, len(elems)))]))
        try:
            relay_ops_helpers.build(name, types, **attrs)
        except DiagnosticError:
            pass
    assert n


def _mutate(value, rng):
    """A random value of the same sort as `value`, often out of range."""
    if isinstance(value, bool):
        return bool(rng.integers(0, 2))
    if isinstance(value, int):
        return int(rng.integers(-6, 7))
    if isinstance(value, float):
        return float(rng.choice([-2.0, -0.5, 0.0, 0.5, 1.0, 3.0]))
    if isinstance(value, (list, tuple)):
        if value and isinstance(value[0], (list, tuple)):
            return [[int(rng.integers(-1, 4)), int(rng.integers(-1, 4))] for _ in range(int(rng.integers(0, 6)))]
        return [int(rng.integers(-3, 6)) for _ in range(int(rng.integers(0, 6)))]
    return value


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_random_attributes_are_diagnostics_and_compute_agrees(name):
    """Attributes mutated at random: rejected at the op, or accepted and then
    the reference computes exactly the inferred type."""
    specs, attrs = SAMPLES[name]
    cls = OP_CLASSES["relay." + name]
    rng = np.random.default_rng(7 + len(name))
    keys = [k for k in cls.ATTRS if k not in ("dtype", "out_dtype", "src_layout", "dst_layout", "layout",
                                              "data_layout", "kernel_layout", "out_layout")]
    if not keys:
        return
    for trial in range(30):
        a = dict(attrs)
        for k in rng.choice(keys, size=min(len(keys), int(rng.integers(1, 3))), replace=False):
            base = a.get(k, cls.ATTRS[k].default)
            if base is REQUIRED or base is None:
                base = [1, 2] if "size" in k or "axes" in k or "shape" in k else 1
            a[k] = _mutate(base, rng)
        try:
            op = relay_ops_helpers.build(name, _types(specs), **a)
        except DiagnosticError:
            continue
        t = op.results[0].type
        sizes = [x.num_elements() for x in (t.types if hasattr(t, "types") else [t])]
        if None in sizes or max(sizes, default=0) > 100000:
            continue
        try:
            out = op.compute(*_arrays(specs))
        except DiagnosticError:
            continue
        relay_ops_helpers.check(out, t)
