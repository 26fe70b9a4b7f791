"""The default CUDA schedules are AutoTVM templates
(conversion/relay_to_te/schedules_cuda.py): each numeric choice is a
``#tune.knob`` whose default is the untuned schedule.  For a handful of ops,
every config of the template (a seeded sample of ten, the default among
them, where the space is larger) is instantiated, lowered and run through
the CUDA launcher with the tir interpreter as the device: it computes what
the relay op's numpy compute() computes, every kernel is bound to blocks
and threads, and no block has more than 1024 threads."""

import os
import random
import sys

import numpy as np
import pytest

from tvmd.autotvm.space import instantiate, templates
from tvmd.backend.cuda.codegen import is_host
from tvmd.backend.llvm.codegen import tir_funcs
from tvmd.conversion.relay_to_te.pass_ import default_schedule_for, lower_function
from tvmd.dialects.te.builder import Emitter
from tvmd.parser import parse_module

sys.path.insert(0, os.path.dirname(__file__))
from test_cuda_schedules import (SOFTMAX, compile_cuda, lower_to_tir, needs_compiler,  # noqa: E402
                                 run, thread_tags)
from topi_check import prim, random_input, reference, same  # noqa: E402

ALL_UP_TO = 16   # larger spaces: a seeded sample
SAMPLE = 10


def relay_template(text):
    """(module with the te.func template, inputs, expected outputs)."""
    m = parse_module(text)
    rf = m.body.first
    rng = np.random.default_rng(0)
    args = [random_input(a.type, rng) for a in rf.body.args]
    want = reference(rf, args)
    lower_function(m, rf, target="cuda")
    return m, args, want


def te_template(text):
    """A te.func without a schedule, given the default CUDA one (a template)."""
    m = parse_module(text)
    tf = m.body.first
    ret = tf.return_op
    ret.detach()
    default_schedule_for("cuda")(Emitter(tf.body, tf.loc), list(ret.operands))
    tf.body.append(ret)
    return m


def space_of(m):
    (func, space), = templates(m)
    return func, space


def configs(space, seed=0):
    """Every index of a small space; else the default and a seeded sample."""
    n = len(space)
    if n <= ALL_UP_TO:
        return list(range(n))
    picks = {space.default().index} | set(random.Random(seed).sample(range(n), SAMPLE - 1))
    return sorted(picks)


def check_kernels(lib):
    """Every kernel binds blocks and threads; no block over 1024 threads."""
    kernels = [f for f in tir_funcs(lib.module) if not is_host(f)]
    assert kernels
    for f in kernels:
        tags = thread_tags(f)
        assert any(t.startswith("blockIdx") for t in tags), f.sym_name
        assert any(t.startswith("threadIdx") for t in tags), f.sym_name
    assert lib.launches, "nothing was launched"
    for name, grid, block in lib.launches:
        assert np.prod(block) <= 1024, (name, block)


RELAY_CASES = {
    # 1000 elements: blocks of 64 ... 512, each with a guarded tail
    "add_relu": (prim([("a", "tensor<10x100xf32>"), ("b", "tensor<10x100xf32>")],
                      ["%s = add(%a, %b) : tensor<10x100xf32>", "%r = nn.relu(%s) : tensor<10x100xf32>"]),
                 {"r.threads": (64, 128, 256, 512)}),
    # shared tiles: the block's side 8/16/32, the K split 8/16/32 (Tk > T and
    # Tk < T included), each tile's padding
    "dense_shared": (prim([("a", "tensor<32x64xf32>"), ("w", "tensor<32x64xf32>")],
                          ["%r = nn.dense(%a, %w) : tensor<32x32xf32>"]),
                     {"r.tile": (8, 16, 32), "r.k": (8, 16, 32), "a_shared.pad": (0, 1),
                      "w_shared.pad": (0, 1)}),
    # 2-d thread blocks, tiles that do not divide the output (guards)
    "dense": (prim([("a", "tensor<20x30xf32>"), ("w", "tensor<12x30xf32>")],
                   ["%r = nn.dense(%a, %w) : tensor<20x12xf32>"]),
              {"r.tile_y": (8, 16), "r.tile_x": (8, 12)}),
    # a conv with a pointwise epilogue: the conv computed per thread
    "conv2d_bias_relu": (prim([("x", "tensor<1x3x10x10xf32>"), ("w", "tensor<8x3x3x3xf32>"), ("b", "tensor<8xf32>")],
                              ["%c = nn.conv2d(%x, %w) {padding = [1, 1, 1, 1]} : tensor<1x8x10x10xf32>",
                               "%e = nn.bias_add(%c, %b) : tensor<1x8x10x10xf32>",
                               "%r = nn.relu(%e) : tensor<1x8x10x10xf32>"]),
                         {"r.tile_y": (8, 16, 32), "r.tile_x": (8, 10)}),
    "max_pool2d": (prim([("x", "tensor<1x4x12x12xf32>")],
                        ["%r = nn.max_pool2d(%x) {pool_size = [3, 3], padding = [1, 1, 1, 1]} "
                         ": tensor<1x4x12x12xf32>"]),
                   {"r.tile_y": (8, 16, 32), "r.tile_x": (8, 12)}),
    # two row reductions (32/64/128 threads a row) and the division (elementwise)
    "softmax": (prim([("a", "tensor<4x200xf32>")], ["%r = nn.softmax(%a) : tensor<4x200xf32>"]),
                {"T_softmax_maxelem.threads": (32, 64, 128), "T_softmax_expsum.threads": (32, 64, 128),
                 "r.threads": (64, 128, 256, 512)}),
}


@pytest.mark.parametrize("case", sorted(RELAY_CASES))
def test_every_config_of_the_template_matches_numpy(case):
    text, knobs = RELAY_CASES[case]
    _, space = space_of(relay_template(text)[0])
    assert {k.name: k.candidates for k in space.knobs} == knobs
    for index in configs(space):
        m, args, want = relay_template(text)
        func, space = space_of(m)
        instantiate(space, space.get(index))
        lower_to_tir(m)
        try:
            lib, outs = run(m, "k", args, [(w.shape, w.dtype) for w in want])
            same(outs, want)
            check_kernels(lib)
        except AssertionError as e:
            raise AssertionError(f"config {index} {space.get(index).values}: {e}") from e


def test_the_defaults_are_todays_schedule():
    # the defaults: 256 threads, 16 x 16 blocks and tiles, K split by 16, rows of 17, 32 threads a row
    text, _ = RELAY_CASES["dense_shared"]
    _, space = space_of(relay_template(text)[0])
    assert space.default().values == {"r.tile": 16, "r.k": 16, "a_shared.pad": 1, "w_shared.pad": 1}
    m, args, want = relay_template(text)
    lower_to_tir(m)
    lib, _ = run(m, "k", args, [(w.shape, w.dtype) for w in want])
    assert lib.launches == [("k", (2, 2, 1), (16, 16, 1))]
    assert "__shared__ float a_shared[272];" in lib.source    # 16 rows of 17
    _, space = space_of(relay_template(RELAY_CASES["softmax"][0])[0])
    assert space.default().values == {"T_softmax_maxelem.threads": 32, "T_softmax_expsum.threads": 32,
                                      "r.threads": 256}


def instantiated(text, values):
    m, args, want = relay_template(text)
    _, space = space_of(m)
    instantiate(space, space.get(space.index_of({**space.default().values, **values})))
    lower_to_tir(m)
    return run(m, "k", args, [(w.shape, w.dtype) for w in want])


def test_a_shared_tile_config_sizes_blocks_tiles_and_padding():
    text, _ = RELAY_CASES["dense_shared"]
    # K split 32 on an 8 x 8 block: the loads bind the tiles' 32-long rows
    # to threadIdx.x, so the block is 32 x 8 and the compute is guarded
    lib, _ = instantiated(text, {"r.tile": 8, "r.k": 32, "a_shared.pad": 0})
    assert lib.launches == [("k", (4, 4, 1), (32, 8, 1))]
    assert "__shared__ float a_shared[256];" in lib.source    # 8 rows of 32, unpadded
    assert "__shared__ float w_shared[264];" in lib.source    # 8 rows of 33
    lib, _ = instantiated(text, {"r.tile": 32, "r.k": 8})
    assert lib.launches == [("k", (1, 1, 1), (32, 32, 1))]
    assert "__shared__ float a_shared[288];" in lib.source    # 32 rows of 9


def test_a_row_reduction_config_sets_the_threads_per_row():
    lib, _ = instantiated(RELAY_CASES["softmax"][0], {"T_softmax_maxelem.threads": 128,
                                                      "T_softmax_expsum.threads": 64, "r.threads": 512})
    assert [(g, b) for _, g, b in lib.launches] == [((4, 1, 1), (128, 1, 1)), ((4, 1, 1), (64, 1, 1)),
                                                   ((2, 1, 1), (512, 1, 1))]
    assert "__shared__ float T_softmax_maxelem_rf[128];" in lib.source


def test_short_extents_cap_the_candidates():
    # a row of 100: 32 or 64 threads; 7 elements: no choice, no knob
    m = te_template(SOFTMAX.replace("37", "100"))
    _, space = space_of(m)
    assert {k.name: k.candidates for k in space.knobs} == {"M.threads": (32, 64), "S.threads": (32, 64),
                                                           "R.threads": (64, 128, 256)}
    m, _, _ = relay_template(prim([("a", "tensor<7xf32>")], ["%r = tanh(%a) : tensor<7xf32>"]))
    assert templates(m) == []


@needs_compiler
def test_nvcc_compiles_the_extreme_configs():
    from tvmd.backend.cuda.codegen import generate
    for case in ("dense_shared", "softmax", "conv2d_bias_relu"):
        text, knobs = RELAY_CASES[case]
        for pick in (min, max):
            m, _, _ = relay_template(text)
            _, space = space_of(m)
            instantiate(space, space.get(space.index_of({k: pick(c) for k, c in knobs.items()})))
            src, _ = generate(lower_to_tir(m))
            assert compile_cuda(src, "sm_90", "cubin")[:4] == b"\x7fELF", case


def test_instantiating_a_row_reduction_retypes_its_rfactor():
    """The factored stage's type spells the config's threads, not the default's."""
    from tvmd.autotvm.space import config_space, instantiate
    from tvmd.ir.printer import print_module
    m = parse_module(RELAY_CASES["softmax"][0])
    tf = lower_function(m, m.body.first, True, "cuda")
    space = config_space(tf)
    values = dict(space.default().values, **{"T_softmax_maxelem.threads": 128})
    instantiate(space, space.get(space.index_of(values)))
    text = print_module(m)
    assert "te.rfactor %T_softmax_maxelem, %k.inner {factor_axis = 1} : tensor<4x128xf32>" in text
    assert print_module(parse_module(text)) == text
