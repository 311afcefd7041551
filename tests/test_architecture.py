"""The import graph keeps the architecture (ARCHITECTURE.md): no import circles; the runtimes stand on the
plan, the kernels, the device and the errors only; the device (ge/npu) stands below the compiler.

Every `import` / `from ... import` in ge/, runtime_v1/ and runtime_v2/ counts, including those inside
functions; `from pkg import name` is an edge to pkg/name.py when that is a module, else to pkg."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ge", "runtime_v1", "runtime_v2")
RUNTIME_MAY_IMPORT = ("ge.plan", "ge.kernels", "ge.npu", "ge.errors")
NPU_MUST_NOT_IMPORT = ("ge.schedule", "ge.memory", "ge.passes", "ge.frontends", "ge.compiler", "ge.kernels",
                       "ge.plan", "ge.api", "runtime_v1", "runtime_v2")


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for f in (ROOT / pkg).rglob("*.py"):
            parts = f.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def _resolve(name: str, modules) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for t in targets:
                r = _resolve(t, modules)
                if r is not None and r != mod:
                    graph[mod].add(r)
    return graph


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _under(mod: str, prefixes) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in prefixes)


def test_no_import_circles():
    assert _cycles(import_graph()) == []


def test_runtimes_stand_on_the_plan_kernels_device_and_errors_only():
    bad = [(m, t) for m, ts in import_graph().items() if _under(m, ("runtime_v1", "runtime_v2"))
           for t in ts if t.startswith("ge") and not _under(t, RUNTIME_MAY_IMPORT)]
    assert bad == []


def test_the_device_stands_below_the_compiler():
    bad = [(m, t) for m, ts in import_graph().items() if _under(m, ("ge.npu",))
           for t in ts if _under(t, NPU_MUST_NOT_IMPORT)]
    assert bad == []


def test_the_graph_sees_imports():
    g = import_graph()
    assert "ge.npu.aicore" in g["runtime_v1.sink"] and "ge.plan" in g["ge.memory.planner"]
