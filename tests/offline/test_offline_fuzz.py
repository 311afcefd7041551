"""Fuzzing offline plans: every mutant of plan.json is refused with a typed error, or loads and runs; a
structural edit that loads computes the same outputs; nothing crashes the process (each mutant is loaded in
a worker process, restarted after a crash). Derandomized; GE_FUZZ_MUTANTS=5000 runs a long campaign."""
import json
import os
import random
import subprocess
import sys
from collections import Counter

import pytest

import ge
from ge.offline.format import seal
from ge.zoo import light_model_path

HERE = os.path.dirname(os.path.abspath(__file__))
MUTANTS = int(os.environ.get("GE_FUZZ_MUTANTS", "120"))


def campaign(original: str, mutants: list, tmp_path) -> tuple[Counter, list]:
    """Run the worker over the mutants; (counts by (class, result), problems)."""
    mdir = tmp_path / "mutants"
    mdir.mkdir()
    for k, (_, _, text) in enumerate(mutants):
        (mdir / f"{k}.json").write_text(text)
    counts, problems, start = Counter(), [], 0
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(HERE))] + sys.path))
    while start < len(mutants):
        proc = subprocess.run([sys.executable, os.path.join(HERE, "fuzz_plans.py"), original, str(mdir), str(start)],
                              capture_output=True, text=True, env=env, timeout=1800)
        done = start
        for line in proc.stdout.splitlines():
            k, result, *detail = line.split(" ", 2)
            k = int(k)
            what, is_semantic, _ = mutants[k]
            kind = "semantic" if is_semantic else "structural"
            counts[(kind, result)] += 1
            if result == "untyped" or (result == "differs" and not is_semantic):
                problems.append(f"{what}: {result} {detail}")
            done = k + 1
        if done < len(mutants) and proc.returncode != 0:   # the worker died on mutant `done`
            counts[("crash", mutants[done][0])] += 1
            problems.append(f"{mutants[done][0]}: crashed the process ({proc.returncode}): {proc.stderr[-300:]}")
            done += 1
        start = done
    return counts, problems


@pytest.mark.parametrize("name", ["squeezenet", "shufflenet"])
def test_plan_mutants_are_refused_or_harmless(name, tmp_path):
    original = str(tmp_path / f"{name}.gem") + "/"
    ge.save(ge.compile(light_model_path(name)), original)
    with open(os.path.join(original, "plan.json")) as f:
        doc = json.load(f)
    doc.pop("digest")
    rng = random.Random(f"ge-fuzz-{name}")
    from fuzz_plans import mutants as make
    sealed = [(what, sem, seal(m)) for what, sem, m in make(doc, rng, MUTANTS)]
    unsealed = [(f"unsealed {what}", sem, json.dumps(m)) for what, sem, m in make(doc, rng, max(5, MUTANTS // 20))]
    counts, problems = campaign(original.rstrip("/"), sealed + unsealed, tmp_path)
    print(f"\n{name}: {dict(sorted(counts.items()))}")
    assert problems == []
    assert counts[("structural", "refused")] > 0 and counts[("structural", "same")] > 0
