"""Attention alone: tvmd fused (nn.attention) vs unfused vs onnxruntime,
time and peak memory, over sequence lengths.

    .venv/bin/python bench/attention.py [--seq 128,512,1024,2048,4096] [--heads 12]
                                        [--head-dim 64] [--threads 2] [--repeat 6]

The model is GPT-2's self-attention as an ONNX graph with a dynamic
sequence (tvmd/testing/gpt_decoder.py's form): Q, K, V [1, seq, heads,
head_dim] and an additive causal mask [1, 1, seq, seq] in; the heads'
transposes, Q·Kᵀ, the scale, the mask, Softmax, ·V and the transpose back.
tvmd prepares it once per variant through the ONNX backend: "fused" (the
default, --fuse-attention at -O3) and "unfused" (the same build with
fuse-attention disabled); every length runs on those two builds.  Times:
the three engines interleaved in one process (bench/models.py), medians
and IQR spread, GFLOP/s of the useful work (Q·Kᵀ and P·V over the keys
each query sees, 4·seq·(seq+1)/2·head_dim·heads) beside the machine's
limit.  The mask hides keys with float32's lowest value, as GPT-2's
code does: the fused kernel skips a tile of keys the mask hides from a
whole group of rows, as it skips the tiles past an op's own causal
diagonal.  Peak memory: each engine and length in a
fresh process, the resident set's growth during one run (sampled each
millisecond) after a warm-up at 8 tokens, over what the inputs already
hold: the scores a run stores, its output and any copies it makes.
With --causal-op the model is ONNX's Attention node (opset 23, 3-d,
is_causal) instead: tvmd imports it as nn.attention with its own causal
mask, whose kernel skips the key tiles past each block's diagonal
without reading a mask; onnxruntime runs the same node.
Numbers only: this never passes or fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from models import interleaved_times, ort_session, spread_pct  # noqa: E402

ENGINES = ("fused", "unfused", "ort")


def attention_model(heads, dh, causal_op=False):
    from onnx import TensorProto, helper
    f = TensorProto.FLOAT

    def info(name, shape):
        return helper.make_tensor_value_info(name, f, shape)
    if causal_op:   # ONNX's Attention (opset 23), 3-d, is_causal: tvmd's causal_mask, no mask input
        node = helper.make_node("Attention", ["q", "k", "v"], ["out"], is_causal=1, q_num_heads=heads,
                                kv_num_heads=heads)
        g = helper.make_graph([node], "attention", [info(n, [1, "seq", heads * dh]) for n in "qkv"],
                              [info("out", [1, "seq", heads * dh])])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])
    nodes = [
        helper.make_node("Transpose", ["q"], ["qt"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v"], ["vt"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["qt", "kt"], ["s"]),
        helper.make_node("Mul", ["s", "scale"], ["ss"]),
        helper.make_node("Add", ["ss", "mask"], ["sm"]),
        helper.make_node("Softmax", ["sm"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "vt"], ["o"]),
        helper.make_node("Transpose", ["o"], ["out"], perm=[0, 2, 1, 3]),
    ]
    scale = helper.make_tensor("scale", f, [], [dh ** -0.5])
    g = helper.make_graph(nodes, "attention", [info(n, [1, "seq", heads, dh]) for n in "qkv"] +
                          [info("mask", [1, 1, "seq", "seq"])], [info("out", [1, "seq", heads, dh])], [scale])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def feeds(seq, heads, dh, seed=0, causal_op=False):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((1, seq, heads, dh)).astype(np.float32) for _ in range(3))
    if causal_op:
        return {n: x.reshape(1, seq, heads * dh) for n, x in zip("qkv", (q, k, v))}
    mask = np.triu(np.full((seq, seq), np.finfo(np.float32).min, np.float32), 1)[None, None]   # as HF's GPT-2 masks
    return {"q": q, "k": k, "v": v, "mask": mask}


def engine(name, model, threads):
    """A function feeds -> output of engine `name`."""
    if name == "ort":
        sess = ort_session(model, threads)
        return lambda f: sess.run(None, f)[0]
    import tvmd.frontend.onnx_backend as backend
    opts = {"disabled_passes": ["fuse-attention"]} if name == "unfused" else None
    rep = backend.prepare(model, compile_options=opts)
    return lambda f: rep.run([f[n] for n in "qkv"] + ([f["mask"]] if "mask" in f else []))[0]


def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def peak_child(name, seq, heads, dh, threads, causal_op=False):
    """In this (fresh) process: the resident set's growth during one run
    over its size before (sampled every millisecond by a thread: the build's
    own peak, which ru_maxrss would report, is long gone by then)."""
    import threading
    run = engine(name, attention_model(heads, dh, causal_op), threads)
    run(feeds(8, heads, dh, causal_op=causal_op))
    f = feeds(seq, heads, dh, causal_op=causal_op)
    before = rss_mib()
    top, done = [before], threading.Event()

    def sample():
        while not done.is_set():
            top[0] = max(top[0], rss_mib())
            time.sleep(0.001)
    t = threading.Thread(target=sample)
    t.start()
    run(f)
    done.set()
    t.join()
    print(json.dumps({"peak_mib": max(top[0], rss_mib()) - before}))


def peak(name, seq, a):
    env = dict(os.environ, TVMD_NUM_THREADS=str(a.threads))
    r = subprocess.run([sys.executable, __file__, "--peak-child", f"{name},{seq}", "--heads", str(a.heads),
                        "--head-dim", str(a.head_dim), "--threads", str(a.threads)] +
                       (["--causal-op"] if a.causal_op else []),
                       capture_output=True, text=True, env=env)
    if r.returncode:
        return float("nan")
    return json.loads(r.stdout.strip().splitlines()[-1])["peak_mib"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seq", default="128,512,1024,2048,4096")
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("TVMD_NUM_THREADS", "2")))
    ap.add_argument("--repeat", type=int, default=6)
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-memory processes")
    ap.add_argument("--causal-op", action="store_true",
                    help="ONNX's Attention node with is_causal instead of the graph and its mask input: "
                         "tvmd's causal tiles are skipped without a mask (engines fused and ort)")
    ap.add_argument("--peak-child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    os.environ["TVMD_NUM_THREADS"] = str(a.threads)
    if a.peak_child:
        name, seq = a.peak_child.split(",")
        return peak_child(name, int(seq), a.heads, a.head_dim, a.threads, a.causal_op)
    import machine
    engines = ("fused", "ort") if a.causal_op else ENGINES
    model = attention_model(a.heads, a.head_dim, a.causal_op)
    runs = [engine(n, model, a.threads) for n in engines]
    form = "ONNX Attention, is_causal" if a.causal_op else "causal"
    print(f"attention, {a.heads} heads x head_dim {a.head_dim}, {form}; {machine.describe(a.threads)}")
    print(f"{'seq':>6} " + " ".join(f"{n + ' ms':>12}" for n in engines) +
          f" {'fused/ort':>9}" + ("" if a.causal_op else f" {'unfused/ort':>11}") +
          f" {'fused GF/s':>10}  spread ({'/'.join(n[0] for n in engines)})" +
          ("" if a.no_memory else f"  peak MiB ({'/'.join(n[0] for n in engines)})"))
    for seq in [int(x) for x in a.seq.split(",")]:
        f = feeds(seq, a.heads, a.head_dim, causal_op=a.causal_op)
        want = runs[-1](f)
        for run in runs[:-1]:
            np.testing.assert_allclose(run(f), want, rtol=1e-3, atol=1e-3)
        rep = max(2, a.repeat if seq <= 1024 else a.repeat // 3)
        times = interleaved_times([lambda r=r: r(f) for r in runs], rep, rounds=2)
        med = [float(np.median(t)) for t in times]
        # the useful work: Q·Kᵀ and P·V over the keys each query sees (causal: half, and the diagonal)
        seen = seq * (seq + 1) / 2   # the keys each query sees: the work left when hidden tiles are skipped
        flop = 4.0 * seen * a.head_dim * a.heads
        line = (f"{seq:>6} " + " ".join(f"{m * 1e3:12.1f}" for m in med) + f" {med[0] / med[-1]:9.2f}" +
                ("" if a.causal_op else f" {med[1] / med[-1]:11.2f}") +
                f" {flop / med[0] / 1e9:10.1f}  " + "/".join(f"{spread_pct(t):.0f}%" for t in times))
        if not a.no_memory:
            line += "  " + "/".join(f"{peak(n, seq, a):.0f}" for n in engines)
        print(line, flush=True)


if __name__ == "__main__":
    main()
