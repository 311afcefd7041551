"""torch.compile(backend="ge") against PyTorch eager and Inductor (torch.compile's default):

    python bench/torch_compile.py [--models resnet50,mobilenet_v2,bert,gpt2,vit] [--machine]
                                  [--contenders eager,inductor,ge,ge-ro] [--rounds 5] [--runs 2]

Needs torch and transformers (the dev venv's python). The held-out set at real sizes, random weights, eval,
no_grad, batch 1, none of them used to write the converters at these sizes: transformers' ResNetModel
(ResNet-50) and MobileNetV2Model (1.0, 224x224) standing for torchvision's (which does not import beside the
CPU torch wheel), BertModel (base, 12 x 768, sequence 128), GPT2LMHeadModel (small, sequence 128, no cache),
ViTModel (base, 224x224, patch 16). `resnet18` / `bert_small` are the earlier pair (torch_nets.py).

One thread each (the default): torch.set_num_threads(1), ge aicore_num=1 and thread_budget=1, and the time
read is the process's CPU time per run (time.process_time: the machine is shared, CPU time follows the load
least). `--machine`: every contender at its defaults (torch's threads, ge's AI cores), wall time.
Contenders: eager, Inductor, ge max-autotune (runtime_v1: "ge"), ge reduce-overhead (runtime_v2 replay:
"ge-ro"). Every contender's output is checked against eager (1e-4 of its scale) before anything is timed;
"first call" is the first call's wall seconds (Dynamo, AOTAutograd and the backend's compile; ge's includes
Numba compiles not yet cached). Calls alternate in a shuffled order round by round; a call is `--runs` runs;
medians, ms per run, ratios to eager and to Inductor, and their geometric means over the models. Prints the
date, CPU, commit and load average before and after.
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "torch_compile"))
# bench/ last: bench/transformers.py must not shadow the transformers package
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE] + [HERE]
import torch_nets  # noqa: E402
from aicores_report import machine  # noqa: E402

HELD_OUT = "resnet50,mobilenet_v2,bert,gpt2,vit"


def model_and_input(name: str):
    """(module, positional inputs) of a model by name."""
    import transformers as T
    torch.manual_seed(0)
    px, ids = torch.randn(1, 3, 224, 224), torch.randint(0, 30000, (1, 128))
    made = {
        "resnet50": lambda: (T.ResNetModel(T.ResNetConfig()), (px,)),   # the default config is ResNet-50
        "mobilenet_v2": lambda: (T.MobileNetV2Model(T.MobileNetV2Config()), (px,)),
        "bert": lambda: (T.BertModel(T.BertConfig()), (ids,)),
        "gpt2": lambda: (T.GPT2LMHeadModel(T.GPT2Config(use_cache=False)), (ids,)),
        "vit": lambda: (T.ViTModel(T.ViTConfig()), (px,)),
        "resnet18": lambda: (torch_nets.ResNet18(), (px,)),
        "bert_small": lambda: (torch_nets.bert(layers=4, hidden=256, heads=4, vocab=30522), (ids[:, :32],)),
    }
    if name not in made:
        raise SystemExit(f"unknown model {name}; known: {', '.join(made)}")
    m, args = made[name]()
    return m.eval(), args


def tensor_of(out) -> torch.Tensor:
    return out if isinstance(out, torch.Tensor) else out[0]


def contenders(model, names: list[str], one_thread: bool) -> dict:
    opts = dict(aicore_num=1, options={"thread_budget": 1}) if one_thread else {}
    made = {"eager": lambda: model, "inductor": lambda: torch.compile(model)}
    for key, mode in (("ge", "max-autotune"), ("ge-ro", "reduce-overhead")):
        config = ge.torch.CompilerConfig(mode=mode, **opts)
        made[key] = lambda c=config: torch.compile(model, backend=ge.torch.get_backend(c), fullgraph=True)
    return {k: made[k]() for k in names}


def measure(name: str, a) -> dict:
    model, args = model_and_input(name)
    fns = contenders(model, a.contenders.split(","), not a.machine)
    clock = time.perf_counter if a.machine else time.process_time
    first = {}
    with torch.no_grad():
        ref = tensor_of(model(*args))
        for k, fn in fns.items():   # the first call compiles; then the outputs must match eager
            t0 = time.perf_counter()
            y = tensor_of(fn(*args))
            first[k] = time.perf_counter() - t0
            err = float((y - ref).abs().max() / ref.abs().max())
            assert err <= 1e-4, f"{name} {k}: error {err:.3g} of the output's scale"
            fn(*args)
        times = {k: [] for k in fns}
        keys, rng = list(fns), np.random.default_rng(0)
        for _ in range(a.rounds):
            for i in rng.permutation(len(keys)):
                t0 = clock()
                for _ in range(a.runs):
                    fns[keys[i]](*args)
                times[keys[i]].append((clock() - t0) / a.runs)
    med = {k: float(np.median(v)) for k, v in times.items()}
    print(f"\n{name}: {'contender':10s} {'ms':>9s} {'vs eager':>9s} {'vs inductor':>12s} {'first call s':>13s}")
    for k in fns:
        vs_ind = f"{med[k] / med['inductor']:11.2f}x" if "inductor" in med else f"{'-':>12s}"
        print(f"{'':{len(name) + 1}s} {k:10s} {med[k] * 1e3:9.2f} {med[k] / med['eager']:8.2f}x {vs_ind} "
              f"{first[k]:13.1f}", flush=True)
    torch._dynamo.reset()
    return med


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=HELD_OUT)
    ap.add_argument("--contenders", default="eager,inductor,ge")
    ap.add_argument("--machine", action="store_true", help="every contender at its defaults, wall time")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=2)
    a = ap.parse_args()
    if not a.machine:
        torch.set_num_threads(1)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC   {machine()}   commit {commit}   "
          f"torch {torch.__version__}")
    how = "whole machine, defaults, wall time" if a.machine else "one thread each, CPU time"
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}   {how}, batch 1, "
          f"{a.rounds} rounds of {a.runs} runs, medians")
    meds = [measure(name, a) for name in a.models.split(",")]
    for base in ("eager", "inductor"):
        for k in meds[0]:
            if k != base and base in meds[0]:
                g = float(np.exp(np.mean([np.log(m[k] / m[base]) for m in meds])))
                print(f"geomean {k} / {base}: {g:.3f}x over {len(meds)} models")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
