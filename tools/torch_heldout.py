"""Issue 49's held-out set for torch.compile(backend="ge"): real transformers architectures none of the
converters were written against (bench/torch_models.py holds the ones they were), small configs, random
weights, eval, no_grad, batch 1. Each is compiled with fullgraph=True, run, and every tensor of its output
compared with eager (1e-4 of the output's scale); then ge (max-autotune, one AI core, thread_budget 1) and
eager (torch.set_num_threads(1)) are timed side by side, alternating:

    python tools/torch_heldout.py [--models electra,mpnet,...] [--rounds 3]

A model counts as passing only if it compiles whole AND matches. torchvision is not importable beside this
CPU torch wheel, so the set is transformers' (its vision models cover ResNet, RegNet, ConvNeXtV2, MobileNetV2,
EfficientNet...). Prints the date, CPU, commit, load before and after, and the pass rate.
"""
from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import time

import numpy as np
import torch

import ge.torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.append(os.path.join(ROOT, "bench"))   # appended: bench/transformers.py must not shadow transformers
from aicores_report import machine  # noqa: E402
from torch_models import flat  # noqa: E402

V = 512
_ENC = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
_DEC = dict(vocab_size=V, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
            use_cache=False)
_S2S = dict(vocab_size=V, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
            decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64,
            use_cache=False)


def _text(cls, cfg, **cfg_kw):
    return lambda T, ids, px: (getattr(T, cls)(getattr(T, cfg)(**cfg_kw)), dict(input_ids=ids))


def _image(cls, cfg, states=False, **cfg_kw):
    """states: every stage's output compared (the last one vanishes at these sizes with random weights)."""
    extra = dict(output_hidden_states=True) if states else {}
    return lambda T, ids, px: (getattr(T, cls)(getattr(T, cfg)(**cfg_kw)), dict(pixel_values=px, **extra))


def _s2s(cls, cfg, **cfg_kw):
    return lambda T, ids, px: (getattr(T, cls)(getattr(T, cfg)(**_S2S, **cfg_kw)),
                               dict(input_ids=ids, decoder_input_ids=ids[:, :8]))


HELDOUT = {
    "electra": _text("ElectraModel", "ElectraConfig", vocab_size=V, embedding_size=32, **_ENC),
    "mpnet": _text("MPNetModel", "MPNetConfig", vocab_size=V, **_ENC),
    "deberta_v2": _text("DebertaV2Model", "DebertaV2Config", vocab_size=V, **_ENC),
    "xlm_roberta": _text("XLMRobertaModel", "XLMRobertaConfig", vocab_size=V, **_ENC),
    "longformer": _text("LongformerModel", "LongformerConfig", vocab_size=V, attention_window=8, **_ENC),
    "funnel": _text("FunnelModel", "FunnelConfig", vocab_size=V, block_sizes=[1, 1], d_model=64, n_head=4,
                    d_head=16, d_inner=128),
    "squeezebert": _text("SqueezeBertModel", "SqueezeBertConfig", vocab_size=V, embedding_size=64, **_ENC),
    "convbert": _text("ConvBertModel", "ConvBertConfig", vocab_size=V, embedding_size=64, **_ENC),
    "roformer": _text("RoFormerModel", "RoFormerConfig", vocab_size=V, embedding_size=64, **_ENC),
    "esm": _text("EsmModel", "EsmConfig", vocab_size=V, pad_token_id=1, **_ENC),
    "bart": _s2s("BartModel", "BartConfig"),
    "marian": _s2s("MarianMTModel", "MarianConfig", decoder_vocab_size=V, pad_token_id=0,
                   decoder_start_token_id=0),
    "pegasus": _s2s("PegasusModel", "PegasusConfig"),
    "gpt_neo": _text("GPTNeoForCausalLM", "GPTNeoConfig", vocab_size=V, hidden_size=64, num_layers=2,
                     num_heads=4, attention_types=[[["global", "local"], 1]], window_size=8, use_cache=False),
    "gptj": _text("GPTJForCausalLM", "GPTJConfig", vocab_size=V, n_embd=64, n_layer=2, n_head=4, rotary_dim=8,
                  n_positions=64, use_cache=False),
    "gpt_neox": _text("GPTNeoXForCausalLM", "GPTNeoXConfig", **_DEC),
    "bloom": _text("BloomForCausalLM", "BloomConfig", vocab_size=V, hidden_size=64, n_layer=2, n_head=4,
                   use_cache=False),
    "falcon": _text("FalconForCausalLM", "FalconConfig", vocab_size=V, hidden_size=64, num_hidden_layers=2,
                    num_attention_heads=4, use_cache=False),
    "mistral": _text("MistralForCausalLM", "MistralConfig", num_key_value_heads=2, **_DEC),
    "qwen2": _text("Qwen2ForCausalLM", "Qwen2Config", num_key_value_heads=2, **_DEC),
    "phi": _text("PhiForCausalLM", "PhiConfig", **_DEC),
    "gemma": _text("GemmaForCausalLM", "GemmaConfig", num_key_value_heads=2, head_dim=16, **_DEC),
    "gpt_bigcode": _text("GPTBigCodeForCausalLM", "GPTBigCodeConfig", vocab_size=V, n_embd=64, n_layer=2,
                         n_head=4, use_cache=False),
    "clip_text": _text("CLIPTextModel", "CLIPTextConfig", vocab_size=V, **_ENC),
    "clip_vision": _image("CLIPVisionModel", "CLIPVisionConfig", image_size=64, patch_size=16, **_ENC),
    "beit": _image("BeitModel", "BeitConfig", image_size=64, patch_size=16, **_ENC),
    "dinov2": _image("Dinov2Model", "Dinov2Config", image_size=64, patch_size=16, **_ENC),
    "yolos": _image("YolosModel", "YolosConfig", image_size=[64, 64], patch_size=16, num_detection_tokens=10,
                    **_ENC),
    "segformer": _image("SegformerModel", "SegformerConfig", hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1],
                        num_attention_heads=[1, 2, 4, 8], decoder_hidden_size=64),
    "convnextv2": _image("ConvNextV2Model", "ConvNextV2Config", hidden_sizes=[16, 32, 64, 128],
                         depths=[1, 1, 1, 1]),
    "regnet": _image("RegNetModel", "RegNetConfig", hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1],
                     groups_width=8, embedding_size=16),
    "resnet_hf": _image("ResNetModel", "ResNetConfig", hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1],
                        embedding_size=16),
    "efficientnet": _image("EfficientNetModel", "EfficientNetConfig", states=True, image_size=64,
                           width_coefficient=0.25, depth_coefficient=0.25, hidden_dim=320),
    "mobilenet_v2_hf": _image("MobileNetV2Model", "MobileNetV2Config", states=True, image_size=64,
                              depth_multiplier=0.35),
    "mobilenet_v1": _image("MobileNetV1Model", "MobileNetV1Config", states=True, image_size=64, depth_multiplier=0.25),
    "swinv2": _image("Swinv2Model", "Swinv2Config", image_size=64, patch_size=4, embed_dim=16, depths=[1, 1],
                     num_heads=[2, 2], window_size=4),
    "poolformer": _image("PoolFormerModel", "PoolFormerConfig", hidden_sizes=[16, 32, 64, 128],
                         depths=[1, 1, 1, 1]),
    "levit": _image("LevitModel", "LevitConfig", states=True, image_size=64, hidden_sizes=[32, 48, 64],
                    num_attention_heads=[2, 2, 2], depths=[1, 1, 1], key_dim=[8, 8, 8]),
    "whisper_encoder": lambda T, ids, px: (
        T.WhisperModel(T.WhisperConfig(vocab_size=V, d_model=64, encoder_layers=2, decoder_layers=2,
                                       encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                                       decoder_ffn_dim=128, num_mel_bins=16, max_source_positions=16,
                                       pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
                                       use_cache=False)).get_encoder(),
        dict(input_features=torch.randn(1, 16, 32))),
    "wav2vec2": lambda T, ids, px: (
        T.Wav2Vec2Model(T.Wav2Vec2Config(vocab_size=V, conv_dim=(32, 32), conv_stride=(5, 2), conv_kernel=(10, 3),
                                         num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                                         **_ENC)),
        dict(input_values=torch.randn(1, 800))),
}


def build(name: str):
    import transformers as T
    torch.manual_seed(0)
    ids, px = torch.randint(2, V, (1, 16)), torch.randn(1, 3, 64, 64)
    model, kw = HELDOUT[name](T, ids, px)
    return model.eval(), kw


def reason(exc: BaseException) -> str:
    inner = getattr(exc, "inner_exception", None) or exc
    return f"{type(inner).__name__}: {str(inner).splitlines()[0] if str(inner) else ''}"[:110]


def timed(fns: dict, kw: dict, rounds: int, runs: int = 3) -> dict:
    times = {k: [] for k in fns}
    for r in range(rounds):
        for k in (list(fns) if r % 2 == 0 else list(fns)[::-1]):
            t0 = time.perf_counter()
            for _ in range(runs):
                fns[k](**kw)
            times[k].append((time.perf_counter() - t0) / runs)
    return {k: float(np.median(v)) for k, v in times.items()}


def one(name: str, rounds: int) -> tuple[bool, str, float]:
    try:
        model, kw = build(name)
    except Exception as exc:  # noqa: BLE001 - a config this transformers version refuses: reported
        return False, f"{name:16s} {'-':>6s} {'-':>9s} {'-':>6s} {'-':>8s}  config: {reason(exc)}", 0.0
    config = ge.torch.CompilerConfig(mode="max-autotune", aicore_num=1, options={"thread_budget": 1})
    torch._dynamo.reset()
    with torch.no_grad():
        ref = flat(model(**kw))
        fn = torch.compile(model, backend=ge.torch.get_backend(config), fullgraph=True)
        try:
            y = flat(fn(**kw))
        except Exception as exc:  # noqa: BLE001 - the break's reason is the row
            return False, f"{name:16s} {'no':>6s} {'-':>9s} {'-':>6s} {'-':>8s}  {reason(exc)}", 0.0
        err = float((y - ref).abs().max() / max(float(ref.abs().max()), 1e-30)) if y.shape == ref.shape \
            else float("inf")
        med = timed({"eager": model, "ge": fn}, kw, rounds)
    ok = err <= 1e-4
    return ok, (f"{name:16s} {'yes':>6s} {err:9.2e} {'yes' if ok else 'NO':>6s} {med['ge'] / med['eager']:7.2f}x"
                f"  eager {med['eager'] * 1e3:.2f} ms"), med["ge"] / med["eager"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(HELDOUT))
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(1)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC   {machine()}   commit {commit}   "
          f"torch {torch.__version__}   load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'model':16s} {'whole':>6s} {'err/scale':>9s} {'match':>6s} {'ge/eager':>8s}  (one thread each) "
          f"or why not")
    names = a.models.split(",")
    passed, ratios = 0, []
    for name in names:
        ok, row, ratio = one(name, a.rounds)
        passed += ok
        ratios += [ratio] if ok else []
        print(row, flush=True)
    print(f"load after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    geomean = float(np.exp(np.mean(np.log(ratios)))) if ratios else float("nan")
    print(f"{passed} of {len(names)} compile whole and match eager ({100 * passed / len(names):.0f}%); "
          f"ge / eager geomean over those {geomean:.2f}x (one thread each)")


if __name__ == "__main__":
    main()
