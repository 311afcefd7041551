"""The model table of torch.compile(backend="ge"): which models compile whole (fullgraph=True), which graph
breaks the others have and why, and whether the outputs match eager (1e-4 of the output's scale):

    python bench/torch_models.py [--models resnet18,bert,...]

Needs torch and transformers (the dev venv's python). Small configs, random weights, eval, no_grad, batch 1:
tests/torch_compile/torch_nets.py's ResNet-18 and MobileNetV2 (torchvision's layer plans; torchvision does
not import beside the CPU torch wheel) and transformers models (default attention: sdpa where the model has
it). A model that fails under fullgraph=True is compiled again without it, to list its graph breaks.
"""
from __future__ import annotations

import argparse
import datetime
import logging
import os
import subprocess
import sys
import time

import torch

import ge.torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "torch_compile"))
# bench/ last: bench/transformers.py must not shadow the transformers package
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE] + [HERE]
import torch_nets  # noqa: E402


def _hf(name: str):
    import transformers as T
    small = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
    ids, px = torch.randint(0, 500, (1, 16)), torch.randn(1, 3, 64, 64)
    made = {
        "bert": lambda: (T.BertModel(T.BertConfig(vocab_size=512, **small)), dict(input_ids=ids)),
        "gpt2": lambda: (T.GPT2LMHeadModel(T.GPT2Config(vocab_size=512, n_embd=64, n_layer=2, n_head=4,
                                                         use_cache=False)), dict(input_ids=ids)),
        "distilbert": lambda: (T.DistilBertModel(T.DistilBertConfig(vocab_size=512, dim=64, n_layers=2, n_heads=4,
                                                                    hidden_dim=128)), dict(input_ids=ids)),
        "roberta": lambda: (T.RobertaModel(T.RobertaConfig(vocab_size=512, **small)), dict(input_ids=ids)),
        "albert": lambda: (T.AlbertModel(T.AlbertConfig(vocab_size=512, embedding_size=32, **small)),
                           dict(input_ids=ids)),
        "llama": lambda: (T.LlamaForCausalLM(T.LlamaConfig(vocab_size=512, num_key_value_heads=2, use_cache=False,
                                                            **small)), dict(input_ids=ids)),
        "opt": lambda: (T.OPTForCausalLM(T.OPTConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2,
                                                      num_attention_heads=4, ffn_dim=128, word_embed_proj_dim=64,
                                                      use_cache=False)), dict(input_ids=ids)),
        "t5_encoder": lambda: (T.T5EncoderModel(T.T5Config(vocab_size=512, d_model=64, d_kv=16, d_ff=128,
                                                            num_layers=2, num_heads=4)), dict(input_ids=ids)),
        "vit": lambda: (T.ViTModel(T.ViTConfig(image_size=64, patch_size=16, **small)), dict(pixel_values=px)),
        "deit": lambda: (T.DeiTModel(T.DeiTConfig(image_size=64, patch_size=16, **small)), dict(pixel_values=px)),
        "convnext": lambda: (T.ConvNextModel(T.ConvNextConfig(hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1])),
                             dict(pixel_values=px)),
        # its last hidden state is all zeros at this size with random weights: every stage's output is compared
        "mobilevit": lambda: (T.MobileViTModel(T.MobileViTConfig(image_size=64, hidden_sizes=[32, 48, 64],
                                                                 neck_hidden_sizes=[8, 16, 24, 32, 40, 48, 160])),
                              dict(pixel_values=px, output_hidden_states=True)),
        "swin": lambda: (T.SwinModel(T.SwinConfig(image_size=64, patch_size=4, embed_dim=16, depths=[1, 1],
                                                  num_heads=[2, 2], window_size=4)), dict(pixel_values=px)),
    }
    return made[name]()


def model(name: str):
    torch.manual_seed(0)
    if name == "resnet18":
        return torch_nets.ResNet18(width=16, classes=100), dict(x=torch.randn(1, 3, 64, 64))
    if name == "mobilenet_v2":
        return torch_nets.MobileNetV2(width=0.5, classes=100), dict(x=torch.randn(1, 3, 64, 64))
    return _hf(name)


MODELS = ("resnet18,mobilenet_v2,bert,gpt2,distilbert,roberta,albert,llama,opt,t5_encoder,vit,deit,convnext,"
          "mobilevit,swin")


def flat(out) -> torch.Tensor:
    """Every tensor of a model's output (ModelOutput fields, tuples of hidden states), flattened, in order."""
    if isinstance(out, torch.Tensor):
        return out.reshape(-1).float()
    items = out.to_tuple() if hasattr(out, "to_tuple") else out
    return torch.cat([flat(x) for x in items if isinstance(x, (torch.Tensor, tuple, list))])


class Breaks(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.ops: dict[str, str] = {}

    def emit(self, record):
        msg = record.getMessage()
        if "graph break at " in msg:
            op = msg.split("graph break at ")[1].split(" ")[0]
            self.ops.setdefault(op, msg.split("): ", 1)[-1].split("; from")[0])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=MODELS)
    a = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC   commit {commit}   torch "
          f"{torch.__version__}   load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'model':14s} {'fullgraph':>9s} {'err/scale':>10s} {'match':>6s} {'first call s':>13s}  graph breaks")
    whole = 0
    names = a.models.split(",")
    for name in names:
        m, kw = model(name)
        m = m.eval()
        breaks = Breaks()
        logging.getLogger("ge.torch").addHandler(breaks)
        torch._dynamo.reset()
        full = True
        with torch.no_grad():
            ref = flat(m(**kw))
            t0 = time.perf_counter()
            try:
                y = flat(torch.compile(m, backend=ge.torch.get_backend(), fullgraph=True)(**kw))
            except Exception:  # noqa: BLE001 - then without fullgraph, to list the breaks
                full = False
                torch._dynamo.reset()
                y = flat(torch.compile(m, backend=ge.torch.get_backend())(**kw))
            seconds = time.perf_counter() - t0
        logging.getLogger("ge.torch").removeHandler(breaks)
        err = float((y - ref).abs().max() / max(float(ref.abs().max()), 1e-30))
        whole += full
        why = "; ".join(f"{op}: {r}" for op, r in breaks.ops.items()) or "-"
        print(f"{name:14s} {'yes' if full else 'no':>9s} {err:10.2e} {'yes' if err <= 1e-4 else 'NO':>6s} "
              f"{seconds:13.1f}  {why}", flush=True)
    print(f"{whole} of {len(names)} compile whole under fullgraph=True")


if __name__ == "__main__":
    main()
