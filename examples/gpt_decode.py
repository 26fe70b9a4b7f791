"""Greedy decoding with a KV cache through one tvmd build.

    .venv/bin/python examples/gpt_decode.py [--tokens 20] [--layers 2] [--hidden 64]

Builds a small GPT-style decoder as an ONNX model (tvmd/testing/gpt_decoder.py:
the sequence, past and total lengths are dynamic), prepares it once with
tvmd's ONNX backend, and generates greedily from a prompt: the prompt in
one step (prefill), then one token a step with the previous step's present
keys and values as the past. onnxruntime decodes the same prompt; the
tokens must be the same.
"""

import argparse
import time

import numpy as np
import onnxruntime as ort

import tvmd.frontend.onnx_backend as backend
from tvmd.testing.gpt_decoder import decoder, generate


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=20)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=100)
    a = ap.parse_args()
    model = decoder(a.layers, a.hidden, a.heads, a.vocab)
    prompt = [int(t) for t in np.random.default_rng(7).integers(0, a.vocab, 8)]

    t0 = time.perf_counter()
    rep = backend.prepare(model)
    print(f"tvmd: prepared in {time.perf_counter() - t0:.2f} s")
    t0 = time.perf_counter()
    ours = generate(lambda feeds: dict(zip(rep.output_names, rep.run(feeds))), model, prompt, a.tokens)
    t_ours = time.perf_counter() - t0

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    t0 = time.perf_counter()
    theirs = generate(lambda feeds: dict(zip(names, sess.run(None, feeds))), model, prompt, a.tokens)
    t_ort = time.perf_counter() - t0

    print("prompt      ", prompt)
    print("tvmd        ", ours)
    print("onnxruntime ", theirs)
    print(f"builds: {rep.builds} for {a.tokens} steps (prompt of {len(prompt)}, then 1 token each)")
    print(f"tokens/s: tvmd {a.tokens / t_ours:.0f}, onnxruntime {a.tokens / t_ort:.0f}")
    if ours != theirs:
        raise SystemExit("the tokens differ")


if __name__ == "__main__":
    main()
