"""AutoTVM templates: knobs (#tune.knob), the config space of a te.func,
instantiating a config, and every config of a template computing what
numpy computes."""

import os
import subprocess
import sys

import numpy as np
import pytest

from tvmd.autotvm.space import config_space, instantiate, templates
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.parser import parse_module

sys.path.insert(0, os.path.dirname(__file__))
from autotvm_check import MATMUL, lower_and_run  # noqa: E402


def space_of(text):
    m = parse_module(text)
    ((func, space),) = templates(m)
    return m, func, space


def test_space_order_and_indexing():
    _, _, space = space_of(MATMUL)
    assert [k.name for k in space.knobs] == ["tile_i", "tile_j", "tile_k"]
    assert len(space) == 4 * 3 * 3
    # AutoTVM's order: the first knob varies fastest
    assert space.get(0).values == {"tile_i": 1, "tile_j": 3, "tile_k": 1}
    assert space.get(1).values == {"tile_i": 4, "tile_j": 3, "tile_k": 1}
    assert space.get(4).values == {"tile_i": 1, "tile_j": 8, "tile_k": 1}
    assert space.get(35).values == {"tile_i": 24, "tile_j": 20, "tile_k": 8}
    for i in range(len(space)):
        assert space.index_of(space.get(i).values) == i
    with pytest.raises(IndexError):
        space.get(len(space))
    d = space.default()
    assert d.values == {"tile_i": 4, "tile_j": 3, "tile_k": 1} and d.index == 1


def test_every_config_computes_the_matmul():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((24, 40)).astype(np.float32)
    b = rng.standard_normal((40, 20)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    n = len(space_of(MATMUL)[2])
    for index in range(n):
        m, func, space = space_of(MATMUL)
        instantiate(space, space.get(index))
        assert not config_space(func).knobs
        np.testing.assert_allclose(lower_and_run(m, a, b), want, rtol=1e-4, atol=1e-4, err_msg=f"config {index}")


def test_a_shared_name_is_one_knob():
    text = MATMUL.replace('#tune.knob<"tile_j", [3, 8, 20]>', '#tune.knob<"tile_i", [1, 4, 5, 24], 4>')
    m, func, space = space_of(text)
    assert [k.name for k in space.knobs] == ["tile_i", "tile_k"]
    assert len(space.knobs[0].uses) == 2
    instantiate(space, space.get(3))   # tile_i = 24 in both splits
    splits = [op for op in func.walk() if op.name == "te.split"]
    assert [op.attributes["factor"] for op in splits[:2]] == [24, 24]


@pytest.mark.parametrize("knob,message", [
    ('#tune.knob<"t", []>', "knob 't' has no candidates"),
    ('#tune.knob<"t", [2, 0]>', "'factor' takes positive integers"),
    ('#tune.knob<"t", [2, 4], 3>', "the default 3 is not one of its candidates"),
    ('#tune.knob<"t", [2, "x"]>', "all integers or all strings"),
    ('#tune.size<"t", [2]>', "unknown knob kind '#tune.size'"),
])
def test_bad_knobs_are_located(knob, message):
    text = MATMUL.replace('#tune.knob<"tile_k", [1, 7, 8]>', knob)
    with pytest.raises(DiagnosticError) as info:
        templates(parse_module(text, "t.te"))
    d = info.value.diagnostics[0]
    assert message in d.message
    assert d.loc.file_line_col()[1] == 11   # the te.split of %k


def test_tvm_tune_space_cli(tmp_path):
    p = tmp_path / "mm.te"
    p.write_text(MATMUL)
    from tvmd.tools import tune_main
    r = subprocess.run([sys.executable, "-c", "import sys; from tvmd.tools.tune_main import main; "
                        "sys.exit(main())", "--space", str(p)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "@matmul: ConfigSpace (len=36, space_map=",
        "   0 tile_i: [1, 4, 5, 24] len=4 default=4",
        "   1 tile_j: [3, 8, 20] len=3 default=3",
        "   2 tile_k: [1, 7, 8] len=3 default=1",
        ")"]
    assert tune_main.USAGE.startswith("usage: tvm-tune")
    q = tmp_path / "plain.te"
    q.write_text(MATMUL.replace('#tune.knob<"tile_i", [1, 4, 5, 24], 4>', "4")
                 .replace('#tune.knob<"tile_j", [3, 8, 20]>', "3").replace('#tune.knob<"tile_k", [1, 7, 8]>', "1"))
    r = subprocess.run([sys.executable, "-m", "tvmd.tools.tune_main", "--space", str(q)], capture_output=True,
                       text=True)
    assert r.returncode == 1 and "has no te.func with knobs" in r.stderr and "Traceback" not in r.stderr
    assert os.path.exists(q)


def test_apply_to_func_gives_a_template_its_defaults():
    """Called directly (not through --apply-schedule), the scheduler fills
    the knobs with their defaults (tile_i 4, tile_j 3) instead of failing."""
    from tvmd.conversion.te_to_tir.apply_schedule import apply_to_func
    from tvmd.ir.printer import print_op
    m, func, space = space_of(MATMUL)
    apply_to_func(func)
    text = print_op(func)
    assert "tir.for %i.outer = 0 to 6 parallel" in text       # 24 rows by 4
    assert "tir.for %j.inner = 0 to 3 vectorized" in text     # 20 columns by 3
    assert "tune.knob" not in text
