"""docs/figures.md, the one page of measured figures: each section is one bench script's output, headed by the
command that printed it, the date, the CPU, the commit and the load.

    python bench/figures.py                        # list the sections and when each was last measured
    python bench/figures.py --run light,replay     # re-measure those sections, rewrite them in the page
    python bench/figures.py --run all              # every section (about an hour on a quiet 2-CPU machine)
    python bench/figures.py --check                # exit 1 if a section lacks its header or its script

Step 1: each section named in --run runs its script in a child process (the repository's own interpreter,
        output captured); a script that fails leaves its section as it was and is reported.
Step 2: the page is rewritten section by section between `<!-- figure:NAME -->` markers; sections not run
        keep their text, so figures taken on different days say so in their own headers.
The docs quote figures from this page by section name; a figure measured on a loaded machine says so in its
header (the load average before the run), and those are to be read as ratios, not absolute times.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent))   # last: bench/transformers.py must not shadow the package
from timing import machine  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "figures.md"


@dataclasses.dataclass(frozen=True)
class Section:
    name: str
    title: str
    argv: tuple[str, ...]     # the script (relative to the repository) and its arguments
    env: tuple[tuple[str, str], ...] = ()

    @property
    def command(self) -> str:
        env = " ".join(f"{k}={v}" for k, v in self.env)
        return " ".join(x for x in (env, "python", *self.argv) if x)


SECTIONS = (
    Section("light", "The 9 light models: latency on both runtimes and onnxruntime, memory plan, compile vs load",
            ("bench/readme_numbers.py", "--rounds", "15")),
    Section("aicores", "Scaling over the AI cores (1 vs 2), the machine's own ceiling, ge vs onnxruntime",
            ("bench/aicores_report.py",)),
    Section("blocks", "Per core: the blocks modern networks are made of, ge vs onnxruntime",
            ("bench/blocks_vs_ort.py",)),
    Section("gemm", "The GEMM core against OpenBLAS on one thread", ("bench/gemm_one_core.py",),
            (("OPENBLAS_NUM_THREADS", "1"),)),
    Section("transformers", "Transformer exports as exported (runtime_v2 replayed, host-driven), fixed shapes "
            "(runtime_v1) and unfused, vs onnxruntime", ("bench/transformers.py", "exports")),
    Section("decode", "Decode steps on a KV cache in place and ge.generate's tokens a second vs onnxruntime",
            ("bench/transformers.py", "decode", "--clock", "cpu")),
    Section("replay", "runtime_v2's host time per node: host-driven, replayed, runtime_v1",
            ("bench/replay_vs_ort.py", "chain")),
    Section("dropin", "The onnxruntime drop-in's cost per run", ("bench/ort_dropin.py",)),
    Section("nodes", "Single nodes where ge's rows are short (pools, depthwise, Softmax, MatMul), ge vs onnxruntime",
            ("bench/nodes_vs_ort.py",)),
    Section("runtime-v2", "runtime_v2: host time per node, static vs prepared, caching allocator, concurrent callers",
            ("bench/runtime_v2_report.py",)),
    Section("stream-modes", "Stream modes: auto (sibling branches) vs engine (GE's one stream per engine)",
            ("bench/stream_modes.py",)),
    Section("gears", "Batch gears' memory: one shared feature map vs GE's 400 MB split", ("bench/gear_memory.py",)),
    Section("dims-gears", "Dims gears over BERT's sequence: one feature map for every gear, runs vs runtime_v2",
            ("bench/dims_gear_memory.py",)),
    Section("control-flow", "A Loop on runtime_v1's label tasks vs runtime_v2 vs onnxruntime",
            ("bench/control_flow.py",)),
    Section("lstm", "One LSTM layer vs onnxruntime", ("bench/lstm_vs_ort.py",)),
    Section("host-cpu", "runtime_v2's host CPU engine vs the kernels it replaces", ("bench/host_cpu.py",)),
    Section("host-tasks", "String and ONNX-ML plans: runtime_v1 host tasks vs runtime_v2", ("bench/host_tasks.py",)),
    Section("qdq", "int8 QDQ models on one core: ge int8 vs float32 vs onnxruntime", ("bench/qdq_vs_ort.py",)),
    Section("precision", "Mixed-precision modes: feature map and error against float32",
            ("bench/precision_modes.py",)),
    Section("partition", "Static pieces of a dynamic plan sunk (a detector-like graph)",
            ("bench/dynamic_partition.py",)),
    Section("footprint", "Peak RSS running ResNet-50, ge beside onnxruntime", ("bench/footprint.py",)),
    Section("cold-start", "Cold start on a fresh clone with empty caches, output piped; then warm",
            ("bench/cold_start.py", "--cases", "resnet50,bert", "--rounds", "1")),
    Section("torch", "torch.compile(backend=\"ge\") vs eager and Inductor", ("bench/torch_compile.py",)),
    Section("hostile", "The held-out hostile inputs: every case a typed refusal or a correct run",
            ("bench/hostile_heldout.py",)),
)
BY_NAME = {s.name: s for s in SECTIONS}
HEADER = re.compile(r"^`(?P<command>[^`]+)` · (?P<when>\d{4}-\d\d-\d\d \d\d:\d\d UTC), (?P<rest>.+)$", re.M)


def _marker(name: str, end: bool = False) -> str:
    return f"<!-- {'/' if end else ''}figure:{name} -->"


def read_sections(text: str) -> dict[str, str]:
    """{name: the text between its markers} for the page's sections."""
    out = {}
    for s in SECTIONS:
        a, b = text.find(_marker(s.name)), text.find(_marker(s.name, end=True))
        if a >= 0 and b > a:
            out[s.name] = text[a + len(_marker(s.name)):b].strip("\n")
    return out


def render(sections: dict[str, str]) -> str:
    lines = ["# Figures", "",
             "Every figure the docs quote, each section printed by the script named in its header, with the date, "
             "the CPU, the commit and the load average before the run (these machines are shared: read ratios "
             "across a row more than absolute times). Regenerate a section with `python bench/figures.py --run "
             "NAME`; do not edit this page by hand.", ""]
    for s in SECTIONS:
        lines += [f"## {s.title}", "", _marker(s.name),
                  sections.get(s.name, f"Not measured yet: `python bench/figures.py --run {s.name}`."),
                  _marker(s.name, end=True), ""]
    return "\n".join(lines)


def run(section: Section) -> str | None:
    """Step 1: the section's script in a child; its text for the page, or None when it failed."""
    head = f"`{section.command}` · {machine()}"
    print(f"[{section.name}] {section.command}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, *section.argv], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **dict(section.env)})
    took = time.perf_counter() - t0
    if done.returncode:
        print(f"[{section.name}] failed (exit {done.returncode}) after {took:.0f} s; its section is kept:\n"
              f"{done.stderr[-2000:]}", file=sys.stderr)
        return None
    print(f"[{section.name}] done in {took:.0f} s", file=sys.stderr, flush=True)
    return f"{head}\n\n```text\n{done.stdout.strip()}\n```"


def check(text: str) -> list[str]:
    """What is wrong with the page: a section without its markers, header or script."""
    problems = []
    sections = read_sections(text)
    for s in SECTIONS:
        if not (ROOT / s.argv[0]).exists():
            problems.append(f"{s.name}: script {s.argv[0]} does not exist")
        body = sections.get(s.name)
        if body is None:
            problems.append(f"{s.name}: no section in {PAGE.name}")
        elif not body.startswith("Not measured yet") and not HEADER.match(body.splitlines()[0]):
            problems.append(f"{s.name}: its first line is not `command` · date, CPU, commit, load")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", help="comma-separated section names, or all")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    text = PAGE.read_text() if PAGE.exists() else ""
    sections = read_sections(text)
    if args.check:
        problems = check(text)
        print("\n".join(problems) or f"{PAGE.relative_to(ROOT)}: {len(SECTIONS)} sections, every one headed")
        return 1 if problems else 0
    if not args.run:
        for s in SECTIONS:
            m = HEADER.match(sections.get(s.name, "").split("\n", 1)[0])
            print(f"{s.name:13} {m['when'] if m else 'not measured':22} {s.command}")
        return 0
    names = [s.name for s in SECTIONS] if args.run == "all" else [n for n in args.run.split(",") if n]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        ap.error(f"unknown section(s) {', '.join(unknown)}: choose among {', '.join(BY_NAME)}")
    failed = []
    for name in names:
        body = run(BY_NAME[name])
        if body is None:
            failed.append(name)
            continue
        sections[name] = body
        PAGE.write_text(render(sections))   # Step 2, after each section: a long run keeps what it measured
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
