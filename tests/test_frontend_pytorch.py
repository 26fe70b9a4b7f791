"""The PyTorch frontend (tvmd.frontend.pytorch): models built from torch.nn,
imported through torch.export and through torch.jit.trace, compiled, and
compared with torch's own outputs."""

import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from tvmd.frontend.pytorch import from_pytorch  # noqa: E402
from tvmd.ir.diagnostics import DiagnosticError  # noqa: E402
from tvmd.ir.printer import print_module  # noqa: E402
from tvmd.runtime.build import build  # noqa: E402

RTOL = 1e-5


class ResNetish(nn.Module):
    """Conv / BN / ReLU stem, max pool, a residual block, a strided
    depthwise-separable block with ReLU6 and hardswish, global pool, linear."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.c1 = nn.Conv2d(16, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.c2 = nn.Conv2d(16, 16, 3, padding=1)
        self.dw = nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16)
        self.pw = nn.Conv2d(16, 32, 1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.pool(self.stem(x))
        y = self.c2(torch.relu(self.bn1(self.c1(x))))
        x = torch.relu(x + y)
        x = nn.functional.hardswish(self.pw(nn.functional.relu6(self.dw(x))))
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1)).flatten(1)
        return torch.log_softmax(self.fc(x), dim=1)


class Block(nn.Module):
    """A GPT-2 block: pre-norm causal self-attention, GELU MLP, residuals."""

    def __init__(self, d=32, heads=4, causal=True):
        super().__init__()
        self.h, self.causal = heads, causal
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        if self.causal:
            mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
            att = att.masked_fill(~mask, float("-inf"))
        y = (att.softmax(dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab=50, d=32, ctx=16):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList([Block(d), Block(d)])
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1]))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def randomized(model):
    """Seeded weights, and batch-norm statistics away from 0 / 1 so they matter."""
    torch.manual_seed(0)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
    return model.eval()


def run(mod, *inputs):
    out = build(mod, fallback=False).run(*[np.asarray(i) for i in inputs])
    return out if isinstance(out, (list, tuple)) else [out]


def check(model, inputs, how, infos=None):
    with torch.no_grad():
        want = model(*inputs)
    want = [want] if isinstance(want, torch.Tensor) else list(want)
    if how == "export":
        mod, params = from_pytorch(torch.export.export(model, tuple(inputs)))
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mod, params = from_pytorch(torch.jit.trace(model, tuple(inputs)), infos)
    assert params is None
    text = print_module(mod)   # build lowers the module in place
    got = run(mod, *[i.numpy() for i in inputs])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=RTOL, atol=RTOL * max(1.0, float(w.abs().max())))
    return text


@pytest.mark.parametrize("how", ["export", "trace"])
def test_cnn_matches_torch(how):
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    text = check(randomized(ResNetish()), [x], how, [("input0", (1, 3, 32, 32))])
    assert "groups = 16" in text   # the depthwise conv


@pytest.mark.parametrize("how", ["export", "trace"])
def test_gpt_matches_torch(how):
    ids = torch.randint(0, 50, (2, 16), generator=torch.Generator().manual_seed(2))
    check(randomized(GPT()), [ids], how, [("ids", ((2, 16), "int64"))])


def test_classic_signature_exports_a_module_from_input_shapes():
    model = randomized(ResNetish())
    mod, _ = from_pytorch(model, [("input0", (1, 3, 32, 32))])
    (arg,) = next(iter(mod.body.ops)).regions[0].blocks[0].args
    assert str(arg.type) == "tensor<1x3x32x32xf32>"
    x = torch.randn(1, 3, 32, 32)
    np.testing.assert_allclose(run(mod, x.numpy())[0], model(x).detach().numpy(), rtol=RTOL, atol=RTOL)


def test_a_dynamic_sequence_dimension_is_one_build_for_every_length():
    model = randomized(Block(causal=False))
    T = torch.export.Dim("T", min=2, max=128)
    ep = torch.export.export(model, (torch.randn(2, 8, 32),), dynamic_shapes={"x": {1: T}})
    mod, _ = from_pytorch(ep)
    (arg,) = next(iter(mod.body.ops)).regions[0].blocks[0].args
    assert str(arg.type) == "tensor<2x?x32xf32>"
    cm = build(mod, fallback=False)
    for n in (2, 7, 64):
        x = torch.randn(2, n, 32)
        np.testing.assert_allclose(cm.run(x.numpy()), model(x).detach().numpy(), rtol=RTOL, atol=1e-5)


def test_an_unsupported_op_names_the_op_and_the_models_line():
    class FFT(nn.Module):
        def forward(self, x):
            return torch.fft.fft(x).real   # the line the error points at

    with pytest.raises(DiagnosticError) as e:
        from_pytorch(FFT(), example_inputs=(torch.randn(4, 8),))
    msg = str(e.value)
    assert "aten::fft_fft" in msg and "no converter" in msg
    loc = e.value.loc
    assert loc.file == __file__
    with open(__file__) as f:
        assert "the line the error points at" in f.read().splitlines()[loc.line - 1]


def test_scalar_arithmetic_casts_and_reductions():
    class Ops(nn.Module):
        def forward(self, x, i):
            y = (2.0 - x) / 3 + x.pow(2) * x.rsqrt().clamp(max=2.0)
            z = y.sum(dim=1, keepdim=True) - y.mean(dim=(0, 1), keepdim=True) + y.amax(dim=-1, keepdim=True)
            w = torch.where(x > 1.0, x, torch.zeros_like(x)) + i.to(torch.float32)
            return z, torch.cat([w, y], dim=0).permute(1, 0), (i // 2 + i % 3).sum(dim=0)

    x = torch.rand(3, 5) + 0.5
    i = torch.randint(0, 9, (3, 5))
    check(Ops(), [x, i], "export")


@pytest.mark.parametrize("how", ["export", "trace"])
def test_rsub_with_alpha_and_the_reciprocal_of_integers(how):
    class Ops(nn.Module):
        def forward(self, x, i):
            return torch.rsub(x, 3.0, alpha=2), torch.rsub(x, x * 2), torch.reciprocal(i)

    check(Ops(), [torch.rand(4) + 1, torch.tensor([1, 2, 4, 8, 3])], how, [("x", (4,)), ("i", ((5,), "int64"))])


class Recurrent(nn.Module):
    """A 2-layer bidirectional batch-first LSTM feeding a GRU; the head reads
    the last step; the final states come out too."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(32, 12)
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        z, hg = self.gru(y.transpose(0, 1))
        return self.fc(z[-1]), h, c, hg


@pytest.mark.parametrize("how", ["export", "trace"])
def test_lstm_and_gru_match_torch(how):
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(3))
    check(randomized(Recurrent()), [x], how, [("x", (2, 5, 8))])


def test_an_in_place_update_of_a_view():
    """export makes it functional (slice_scatter); TorchScript's graph keeps
    the mutation, which is refused rather than converted wrong."""
    class Masked(nn.Module):
        def forward(self, x):
            m = torch.zeros(4, 6)
            m[1:3, 2:5] = 1.0
            y = x + m
            y.relu_()
            return y * 2

    x = torch.randn(4, 6)
    check(Masked(), [x], "export")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(Masked(), x)
    with pytest.raises(DiagnosticError, match="in-place update of a view"):
        from_pytorch(traced, [("x", (4, 6))])


# -- real architectures: torchvision's code, transformers' configs (random weights) ----------

def torchvision_model(name):
    tv = pytest.importorskip("torchvision")
    from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
    torch.manual_seed(0)
    if name == "resnet18_fpn":
        return resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=5)
    if name == "vit":
        return tv.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                           hidden_dim=64, mlp_dim=128, num_classes=10)
    return getattr(tv.models, name)(weights=None)


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small", "efficientnet_b0", "convnext_tiny",
                                  "swin_t", "resnet18_fpn", "vit"])
def test_torchvision_models_match_torch(name):
    model = randomized(torchvision_model(name))
    if name == "vit":   # its head starts at zero: give it weights so the output says something
        with torch.no_grad():
            model.heads.head.weight.normal_()
    size = 32 if name == "vit" else 64
    x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        want = model(x)
    want = list(want.values()) if isinstance(want, dict) else [want]
    mod, _ = from_pytorch(torch.export.export(model, (x,)))
    got = run(mod, x.numpy())
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = w.numpy()
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=RTOL * float(np.abs(w).max()))


def transformers_model(name):
    tf = pytest.importorskip("transformers")
    torch.manual_seed(0)
    ids = torch.randint(0, 100, (1, 12), generator=torch.Generator().manual_seed(5))
    small = dict(num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
    if name == "bert":
        cfg = tf.BertConfig(vocab_size=100, hidden_size=32, max_position_embeddings=64, **small)
        return tf.BertModel(cfg), {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if name == "gpt2":
        cfg = tf.GPT2Config(use_cache=False, vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=64)
        return tf.GPT2LMHeadModel(cfg), {"input_ids": ids}
    if name == "vit":
        cfg = tf.ViTConfig(image_size=32, patch_size=8, hidden_size=32, **small)
        return tf.ViTModel(cfg), {"pixel_values": torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(6))}
    cfg = tf.T5Config(use_cache=False, vocab_size=100, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4)
    return tf.T5Model(cfg), {"input_ids": ids, "decoder_input_ids": ids[:, :5]}


@pytest.mark.parametrize("name", ["bert", "gpt2", "vit", "t5"])
def test_transformers_models_match_torch(name):
    model, inputs = transformers_model(name)
    model = model.eval()
    with torch.no_grad():
        out = model(**inputs)
    want = out.logits if name == "gpt2" else out.last_hidden_state
    ep = torch.export.export(model, (), kwargs=inputs, strict=False)
    mod, _ = from_pytorch(ep)
    got = run(mod, *[v.numpy() for v in inputs.values()])[0]
    w = want.numpy()
    np.testing.assert_allclose(got, w, rtol=RTOL, atol=RTOL * float(np.abs(w).max()))


class SDPA(torch.nn.Module):
    def __init__(self, causal=False, scale=None):
        super().__init__()
        self.causal, self.scale = causal, scale

    def forward(self, q, k, v, mask=None):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=self.causal,
                                                                scale=self.scale)


@pytest.mark.parametrize("form", ["causal", "bool-mask", "float-mask", "scale", "3d"])
def test_sdpa_is_one_attention_op(form):
    """4-d scaled_dot_product_attention becomes one nn.attention (its causal
    mask torch's top-left tril, with more keys than queries here; a bool
    mask's row with no key NaN on both sides); 3-d stays the products and
    softmax it stands for."""
    g = torch.Generator().manual_seed(7)
    shape = (2, 3, 5, 8) if form != "3d" else (3, 5, 8)
    q = torch.randn(*shape, generator=g)
    k, v = (torch.randn(*shape[:-2], 7, 8, generator=g) for _ in range(2))
    inputs = [q, k, v]
    if form == "bool-mask":
        mask = torch.rand(2, 1, 5, 7, generator=g) > 0.3
        mask[0, 0, 2] = False   # query 2 of batch 0 sees no key
        inputs.append(mask)
    elif form == "float-mask":
        inputs.append(torch.randn(1, 3, 5, 7, generator=g))
    model = SDPA(causal=form == "causal", scale=0.2 if form == "scale" else None)
    text = check(model, inputs, "export")
    assert ("nn.attention(" in text) == (form != "3d") and ("nn.softmax" in text) == (form == "3d")
    if form == "causal":
        assert 'causal_mask = "top_left"' in text
