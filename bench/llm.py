"""GPT-style decoding: one tvmd build for every length, against onnxruntime.

    .venv/bin/python bench/llm.py [--layers 2,12] [--hidden 768] [--heads 12]
                                  [--vocab 50257] [--prefill 32,128,512]
                                  [--decode 16] [--prompt 32] [--threads 2] [--repeat 8]
                                  [--seed-matmul 4] [--disable-pass fuse-attention]
                                  [--mixed-precision bfloat16] [--quantize-weights int8]
                                  [--quantize-dynamic] [--transformers]

The model is tvmd/testing/gpt_decoder.py's (the decoder of
examples/gpt_decode.py at GPT-2 small's width: pre-LayerNorm blocks, a KV
cache as inputs and outputs, the LM head tied to the embedding) with its
sequence, past and total lengths dynamic.  tvmd's ONNX backend prepares it
once; every length below runs on that build (the builds are counted and
printed).  First, the seed's MatMul ([8, 2048, 12288] x [12288, 12288], a
constant weight) at 1/--seed-matmul of each dimension: tvmd, onnxruntime
and numpy, GFLOP/s beside the machine's limit.  Then per model:

* prefill: the prompt of N tokens in one step, no past; tvmd and
  onnxruntime (intra-op threads = --threads) timed in interleaved blocks
  (bench/models.py), medians and the IQR spread, ratio tvmd/ort;
* decode: after a --prompt-token prompt (32), --decode steps of one token each, the
  present keys and values fed back as the past; tokens per second of each
  engine (the median step; each engine decodes DECODE_ROUNDS times, the
  engines' decodes alternating after a pause).

With --mixed-precision, tvmd's build runs its products in bfloat16 (or
float16) summed in float32 (build's mixed_precision, --to-mixed-precision;
on AVX512-BF16 the weights packed for vdpbf16ps), onnxruntime stays
float32, and the logits' largest difference and argmax agreement are
printed per prefill length.  With --quantize-weights int8, tvmd's constant
weights are int8 with a float32 scale per output column (build's
quantize_weights, --quantize-weights: weight-only, the sums float32);
the same differences are printed.  With --quantize-dynamic, the model is
quantized by onnxruntime's quantize_dynamic (DynamicQuantizeLinear +
MatMulInteger, int8 weights) and both engines run that model.  With
--transformers, the model is transformers' GPT-2 itself (random weights,
eager attention) exported by torch.onnx with a dynamic sequence and no
cache, as a user would: prefill only.

Numbers only: this never passes or fails.  Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DECODE_ROUNDS = 3   # decodes per engine, alternating
sys.path.insert(0, HERE)
from models import interleaved_times, ort_session, spread_pct  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", default="2,12")
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--prefill", default="32,128,512")
    ap.add_argument("--decode", type=int, default=16)
    ap.add_argument("--prompt", type=int, default=32, help="the prompt's tokens before decoding (the past)")
    ap.add_argument("--threads", type=int, default=int(os.environ.get("TVMD_NUM_THREADS", "2")))
    ap.add_argument("--repeat", type=int, default=8)
    ap.add_argument("--seed-matmul", type=int, default=4, metavar="Q",
                    help="the seed's MatMul [8, 2048, 12288] x [12288, 12288] at 1/Q of each dimension "
                         "(0: skip)")
    ap.add_argument("--disable-pass", action="append", default=[], metavar="PASS",
                    help="a graph pass of the -O3 preset to leave out (repeatable): A/B of one pass")
    ap.add_argument("--mixed-precision", choices=["bfloat16", "float16"],
                    help="build tvmd's model with its products in this type, summed in float32 "
                         "(onnxruntime stays float32; the logits' difference is printed)")
    ap.add_argument("--quantize-weights", choices=["int8"],
                    help="build tvmd's model with weight-only int8 (onnxruntime stays float32)")
    ap.add_argument("--quantize-dynamic", action="store_true",
                    help="both engines run the model as onnxruntime's quantize_dynamic leaves it")
    ap.add_argument("--transformers", action="store_true",
                    help="the model is transformers' GPT-2 (random weights) exported by torch.onnx with a "
                         "dynamic sequence, no cache: prefill only")
    a = ap.parse_args(argv)
    os.environ["TVMD_NUM_THREADS"] = str(a.threads)
    import tvmd.frontend.onnx_backend as backend
    from tvmd.testing.gpt_decoder import decoder, empty_cache, next_cache, step_feeds

    if a.seed_matmul:
        seed_matmul(backend, a.seed_matmul, a.threads, a.repeat)
    print(f"GPT-style decoder, hidden {a.hidden}, {a.heads} heads, vocab {a.vocab}; {a.threads} thread(s)"
          + (f"; tvmd's products in {a.mixed_precision} (onnxruntime float32)" if a.mixed_precision else "")
          + ("; tvmd's weights int8 (onnxruntime float32)" if a.quantize_weights else ""))
    if a.quantize_dynamic:
        print("both engines run the model quantized by onnxruntime's quantize_dynamic (MatMulInteger)")
    lowp = a.mixed_precision or (a.quantize_weights and f"{a.quantize_weights}-weight") or \
        (a.quantize_dynamic and "dynamic-int8")
    for layers in [int(x) for x in a.layers.split(",")]:
        model = transformers_gpt2(layers, a.hidden, a.heads, a.vocab) if a.transformers else \
            decoder(layers, a.hidden, a.heads, a.vocab, max_pos=1024)
        if a.quantize_dynamic:
            model = quantized_dynamic(model)
        t0 = time.perf_counter()
        options = {"disabled_passes": a.disable_pass} if a.disable_pass else {}
        if a.mixed_precision:
            options["mixed_precision"] = a.mixed_precision
        if a.quantize_weights:
            options["quantize_weights"] = a.quantize_weights
        rep = backend.prepare(model, compile_options=options or None)
        prep = time.perf_counter() - t0
        sess = ort_session(model, a.threads)
        names = [o.name for o in sess.get_outputs()]
        empty = None if a.transformers else empty_cache(model)
        rng = np.random.default_rng(0)
        print(f"\n{layers} layer(s): prepared once in {prep:.1f} s")
        print(f"  {'prefill':>10} {'tvmd ms':>9} {'ort ms':>9} {'tvmd/ort':>9}  spread tvmd/ort")
        for n in [int(x) for x in a.prefill.split(",")]:
            tokens = [int(t) for t in rng.integers(0, a.vocab, n)]
            feeds = {"ids": np.array([tokens], np.int64)} if a.transformers else step_feeds(tokens, 0, empty)
            if lowp:
                lo, hi = rep.run(feeds)[0], sess.run(None, feeds)[0]
                print(f"  {lowp} logits at {n} tokens: max |tvmd - ort| {np.abs(lo - hi).max():.3g} "
                      f"(largest |logit| {np.abs(hi).max():.3g}), same argmax at "
                      f"{100 * np.mean(lo.argmax(-1) == hi.argmax(-1)):.0f}% of positions")
            ours, theirs = interleaved_times([lambda: rep.run(feeds), lambda: sess.run(None, feeds)], a.repeat)
            mo, mt = np.median(ours), np.median(theirs)
            print(f"  {n:>7} tok {mo * 1e3:9.2f} {mt * 1e3:9.2f} {mo / mt:9.2f}  "
                  f"{spread_pct(ours):.0f}% / {spread_pct(theirs):.0f}%")
        if a.transformers:
            print(f"  builds: {rep.builds} (prefill at {a.prefill} tokens)")
            continue
        # decode: each engine feeds its own presents back, its steps timed in
        # blocks (a whole decode from the prompt's cache), the engines'
        # blocks alternating after a pause: timed step by step in
        # alternation, onnxruntime's threads spin on after its step and take
        # a core from tvmd's next one (measured: 31 tokens/s that way, 80 alone)
        prompt = [int(t) for t in rng.integers(0, a.vocab, a.prompt)]
        caches = []
        for run in (lambda f: dict(zip(rep.output_names, rep.run(f))),
                    lambda f: dict(zip(names, sess.run(None, f)))):
            res = run(step_feeds(prompt, 0, empty))
            caches.append((run, next_cache(res)))
        secs = [[], []]
        for _ in range(DECODE_ROUNDS):
            for k, (run, cache) in enumerate(caches):
                time.sleep(0.2)
                secs[k] += decode_times(run, cache, a.decode, a.prompt)
        tps = [1 / np.median(s) for s in secs]
        print(f"  decode: tvmd {tps[0]:.1f} tokens/s, onnxruntime {tps[1]:.1f} tokens/s "
              f"(tvmd/ort {tps[0] / tps[1]:.2f}; spread {spread_pct(secs[0]):.0f}% / {spread_pct(secs[1]):.0f}%)")
        print(f"  builds: {rep.builds} (prefill at {a.prefill} tokens and {a.decode} decode steps)")


def transformers_gpt2(layers, hidden, heads, vocab):
    """transformers' GPT2LMHeadModel (eager attention, random weights) as
    ONNX through torch.onnx.export (TorchScript), ids [1, seq] -> logits,
    the sequence dynamic: the masks and views its code builds from sizes."""
    import io
    import warnings

    import onnx
    import torch
    path = sys.path[:]   # bench/kernels.py is no package 'kernels', which transformers looks for
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
    try:
        import transformers
        lm_class = transformers.GPT2LMHeadModel
    finally:
        sys.path[:] = path
    cfg = transformers.GPT2Config(n_layer=layers, n_embd=hidden, n_head=heads, vocab_size=vocab, n_positions=1024,
                                  bos_token_id=0, eos_token_id=0)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    lm = lm_class(cfg).eval()

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lm = lm

        def forward(self, ids):
            return self.lm(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False).logits
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Logits(), (torch.zeros(1, 5, dtype=torch.int64),), buf, input_names=["ids"],
                          output_names=["logits"], dynamic_axes={"ids": {1: "seq"}, "logits": {1: "seq"}},
                          opset_version=17, dynamo=False)
    return onnx.load_from_string(buf.getvalue())


def seed_matmul(backend, q, threads, repeat):
    """The seed's MatMul, [8, 2048, 12288] x [12288, 12288] with the right
    side a constant weight, at 1/q of each dimension: tvmd (ONNX backend),
    onnxruntime and numpy (OpenBLAS), interleaved; GFLOP/s beside the
    machine's limit."""
    import machine
    from onnx import TensorProto, helper, numpy_helper
    b, m, k = 8 // q or 1, 2048 // q, 12288 // q
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((k, k)) / np.sqrt(k)).astype(np.float32)
    x = rng.standard_normal((b, m, k)).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "seed_matmul",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, m, k])],
                          [numpy_helper.from_array(w, "w")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    rep, sess = backend.prepare(model), ort_session(model, threads)
    np.testing.assert_allclose(rep.run([x])[0], x @ w, rtol=1e-3, atol=1e-3)
    times = interleaved_times([lambda: rep.run([x]), lambda: sess.run(None, {"x": x}), lambda: x @ w], repeat)
    flop = 2.0 * b * m * k * k
    cells = "  ".join(f"{name} {np.median(t) * 1e3:.1f} ms {flop / np.median(t) / 1e9:.0f} GFLOP/s "
                      f"(spread {spread_pct(t):.0f}%)" for name, t in zip(("tvmd", "ort", "numpy"), times))
    print(f"seed MatMul at 1/{q}: [{b}, {m}, {k}] x [{k}, {k}], {flop / 1e9:.1f} GFLOP; {machine.describe(threads)}")
    print(f"  {cells}")
    print(f"  tvmd/ort {np.median(times[0]) / np.median(times[1]):.2f}, "
          f"tvmd/numpy {np.median(times[0]) / np.median(times[2]):.2f}\n")


def quantized_dynamic(model):
    """`model` as onnxruntime's quantize_dynamic leaves it (int8 weights)."""
    import logging
    import tempfile
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    logging.getLogger().setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as d:
        onnx.save(model, os.path.join(d, "f.onnx"))
        quantize_dynamic(os.path.join(d, "f.onnx"), os.path.join(d, "q.onnx"), weight_type=QuantType.QInt8)
        return onnx.load(os.path.join(d, "q.onnx"))


def decode_times(run, cache, steps, prompt=32):
    """The seconds of each of `steps` one-token steps after a `prompt`-token
    prompt whose presents are `cache`."""
    from tvmd.testing.gpt_decoder import next_cache, step_feeds
    out = []
    for step in range(steps):
        f = step_feeds([1], prompt + step, cache)
        t0 = time.perf_counter()
        res = run(f)
        out.append(time.perf_counter() - t0)
        cache = next_cache(res)
    return out


if __name__ == "__main__":
    main()
