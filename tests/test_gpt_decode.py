"""Greedy decoding with a KV cache: one build of a decoder with dynamic
sequence and past lengths serves the prompt and every one-token step, and
its 20 tokens equal onnxruntime's (logits compared at each step too)."""

import numpy as np
import onnxruntime as ort

import tvmd.frontend.onnx_backend as backend
from tvmd.testing.gpt_decoder import decoder, generate


def test_twenty_greedy_tokens_equal_onnxruntime():
    model = decoder(layers=2, hidden=64, heads=2, vocab=100)
    rep = backend.prepare(model)
    compiled = rep._dynamic.run.compiled
    assert not compiled.interpreted, compiled.summary()
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    steps = []

    def ours(feeds):
        got = dict(zip(rep.output_names, rep.run(feeds)))
        want = dict(zip(names, sess.run(None, feeds)))
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-4, err_msg=k)
        steps.append(feeds["input_ids"].shape[1])
        return got
    prompt = [3, 14, 15, 92, 65, 35, 89, 79]
    got = generate(ours, model, prompt, 20)
    want = generate(lambda feeds: dict(zip(names, sess.run(None, feeds))), model, prompt, 20)
    assert got == want
    assert steps == [8] + [1] * 19
    assert rep.builds == 1


def test_a_bfloat16_build_serves_every_length_close_to_onnxruntime():
    """build's mixed_precision through the backend's compile options: the
    decoder's products in bf16 summed in float32 (on AVX512-BF16 its
    weights packed for vdpbf16ps), one build for prefill and decoding,
    the logits within bf16's rounding of onnxruntime's float32 ones."""
    from tvmd.backend.spec import parse_target
    from tvmd.testing.gpt_decoder import empty_cache, next_cache, step_feeds
    model = decoder(layers=2, hidden=64, heads=2, vocab=100)
    rep = backend.prepare(model, compile_options={"mixed_precision": "bfloat16"})
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    past = empty_cache(model)
    rng = np.random.default_rng(1)
    for n in (7, 1, 1, 64):
        feeds = step_feeds([int(t) for t in rng.integers(0, 100, n)], next(iter(past.values())).shape[1], past)
        got, want = rep.run(feeds), sess.run(None, feeds)
        scale = np.abs(want[0]).max()
        assert np.abs(got[0] - want[0]).max() <= 0.03 * scale, n
        past = next_cache(got._asdict())
    assert rep.builds == 1
    stats = rep._dynamic.run.compiled.stats
    assert stats["to-mixed-precision"]["ops-in-low-precision"] > 0
    packed = stats["alter-op-layout"].get("bf16-dense-pack", 0)
    assert (packed > 0) == bool(parse_target("llvm").vector_unit().bf16_lanes)


def test_the_cache_grows_in_place_and_nothing_a_caller_holds_changes():
    """Each step's present keys and values extend the past it was given in
    the same buffer (no copy of the cache per token); a past fed again
    after a later step (a branch) goes to a new buffer, and what the later
    step returned stays as it was."""
    from tvmd.testing.gpt_decoder import empty_cache, next_cache, step_feeds
    model = decoder(layers=2, hidden=64, heads=2, vocab=100)
    rep = backend.prepare(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])

    def step(tokens, past, cache):
        feeds = step_feeds(tokens, past, cache)
        got = dict(zip(rep.output_names, rep.run(feeds)))
        want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-4, err_msg=k)
        return next_cache(got)

    c0 = step([3, 14, 15, 92, 65, 35, 89, 79], 0, empty_cache(model))
    c1 = step([7], 8, c0)
    c2 = step([8], 9, c1)
    for k in c0:
        assert np.shares_memory(c1[k], c0[k]) and np.shares_memory(c2[k], c1[k]), k
    kept = {k: v.copy() for k, v in c2.items()}
    b2 = step([9], 9, c1)           # c1 again: a branch
    for k in c0:
        assert not np.shares_memory(b2[k], c2[k]), k
        np.testing.assert_array_equal(c2[k], kept[k], err_msg=k)
    c3 = step([10], 10, c2)         # the first line goes on in place
    for k in c0:
        assert np.shares_memory(c3[k], c2[k]), k
        np.testing.assert_array_equal(b2[k][:, :9], c1[k], err_msg=k)
