"""GE's option names: each one ge accepts sets a field or is GE's default; each one ge knows and does not do is
refused with its reason; docs/options.md's GE-options table lists every name ge accepts or refuses."""
import re
from pathlib import Path

import pytest

import ge
from ge.errors import GEError
from ge.options import GE_ALIASES, GE_REFUSED, MEMORY_POLICY

OPTIONS_DOC = Path(__file__).resolve().parents[1] / "docs" / "options.md"


@pytest.mark.parametrize("key", ["ac_parallel_enable", "AC_PARALLEL_ENABLE"])
@pytest.mark.parametrize("value", ["", "0", 0])
def test_ac_parallel_enable_default_is_accepted(key, value):
    """docs/ge-reference.md §3.3 step 2 and §5: ac_parallel_enable "" or "0" is GE's default (no AICPU stream of
    its own on dynamic-shape graphs), which is what ge does: accepted, nothing changes."""
    assert ge.Options.from_dict({key: value}) == ge.Options()


def test_ac_parallel_enable_1_is_refused_with_the_reason():
    """docs/ge-reference.md §3.3 step 2 and §8.16: "1" gives AICPU subgraphs of dynamic graphs their own stream,
    a rule ge's stream assignment does not have, so ge refuses it and says why (never dropped silently)."""
    with pytest.raises(GEError, match=r"ac_parallel_enable=1 is not supported by ge: .*AssignAicpuCanParallel"):
        ge.Options.from_dict({"AC_PARALLEL_ENABLE": "1"})
    with pytest.raises(GEError, match="takes '', '0' or '1'"):
        ge.Options.from_dict({"ac_parallel_enable": "yes"})


@pytest.mark.parametrize("key", sorted(GE_REFUSED))
def test_known_ge_options_ge_does_not_do_are_refused_by_name(key):
    """docs/ge-reference.md §5: options ge does not implement fail naming the option and the reason."""
    with pytest.raises(GEError, match=re.escape(f"GE option {key}=") + ".*not supported by ge: " +
                       re.escape(GE_REFUSED[key][:20])):
        ge.Options.from_dict({key: "1"})


def test_memory_priority_policy_combines_with_bfs_dfs_and_refuses_rdfs():
    """docs/ge-reference.md §1.1: MemoryPriority replaces the ready stack of BFS and DFS; with RDFS/StableRDFS ge
    says it has no such combination instead of dropping one option."""
    for mode in ("0", "1"):
        o = ge.Options.from_dict({"ge.topoSortingMode": mode, "ge.exec.memoryOptimizationPolicy": "MemoryPriority"})
        assert o.topo_sorting_mode == "memory_priority"
    assert ge.Options.from_dict({"ge.exec.memoryOptimizationPolicy": ""}) == ge.Options()
    with pytest.raises(GEError, match="MemoryPriority with topo_sorting_mode '3'"):
        ge.Options.from_dict({"ge.topoSortingMode": "3", "ge.exec.memoryOptimizationPolicy": "MemoryPriority"})


def _ge_options_section(text: str) -> str:
    start = text.index("## GE options")
    end = text.find("\n#", start + 5)
    return text[start:end if end > 0 else len(text)]


def test_options_doc_lists_every_ge_option():
    """The acceptance of issue 21: the docs/options.md's GE-options table lists every GE option ge accepts or refuses."""
    text = OPTIONS_DOC.read_text()
    table = _ge_options_section(text)
    for key in (*GE_ALIASES, *GE_REFUSED, *MEMORY_POLICY):
        assert f"`{key}`" in table, f"docs/options.md's GE-options table does not list {key}"


def test_options_doc_names_real_fields_and_the_environment():
    """The table's ge column names existing Options fields only (no stale names), every field a GE alias sets
    is named in its row, and the GE environment variables ge reads are listed."""
    import dataclasses
    text = OPTIONS_DOC.read_text()
    rows = [r for r in _ge_options_section(text).splitlines() if r.startswith("| `")]
    fields = {f.name for f in dataclasses.fields(ge.Options)}
    samples = {"ge.exec.staticMemoryPolicy": "2", "EVENT": "notify", "ac_parallel_enable": "0",
               "AC_PARALLEL_ENABLE": "0", "ge.autoMultistreamParallelMode": "auto", "HCCL_EXEC_TIMEOUT": "5",
               "ge.exec.precision_mode_v2": "fp16", "ge.exec.modify_mixlist": (), "modify_mixlist": (),
               "keep_dtype": "x", "ge.dynamicBatchSize": "1,2", "dynamic_batch_size": "1,2",
               "ge.streamMaxParallelNum": "AIcoreEngine:2", "ge.exec.deviceId": "0"}
    for row in rows:
        ge_col = row.split("|")[2]
        for name in re.findall(r"`([a-z_]+)(?:=[^`]*)?`", ge_col):
            assert name in fields, f"docs/options.md's GE-options row names '{name}', which Options does not have: {row[:80]}"
    for key, alias in GE_ALIASES.items():
        pair = alias(samples.get(key, "1"))
        if pair is None:
            continue
        row = next(r for r in rows if f"`{key}`" in r.split("|")[1])
        assert f"`{pair[0]}" in row.split("|")[2], f"docs/options.md's row for {key} does not name the field {pair[0]}"
    for env in ("ENABLE_DYNAMIC_SHAPE_MULTI_STREAM", "OP_NO_REUSE_MEM"):
        assert any(f"`{env}`" in r.split("|")[1] for r in rows), f"docs/options.md's GE-options table lacks {env}"


def test_an_option_that_would_do_nothing_is_refused():
    """`extra` was accepted and never read: a setting that silently does nothing is refused instead."""
    with pytest.raises(GEError, match="unknown option 'extra'"):
        ge.Options(extra={"x": 1})
