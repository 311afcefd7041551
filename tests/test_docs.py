"""The repository can be read on its own: no file points at a document outside it, and every docs page,
relative link, docs/ge-reference.md section and bench/ script that a file cites exists.

GE's rules and what GE's users read about GE are restated in docs/ge-reference.md (§8 for the articles), so
a comment cites that page's section ("docs/ge-reference.md §3.4") or GE's public source path, never notes
kept outside the repository, and never a quote in another language. The scan covers every .py and .md file
(comments, docstrings and strings alike); each test fails listing file:line and what to cite instead."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP_DIRS = {".git", "__pycache__", ".pytest_cache", "build", "dist", ".venv", "node_modules"}
THIS = Path(__file__).resolve()

# (pattern, what to do instead). Written so this file does not match itself.
OUTSIDE = [
    (re.compile(r"GE_" + r"REFERENCE"), "cite docs/ge-reference.md §N.N (same section numbers)"),
    (re.compile(r"\bseeds?[ /_]?0\d\d|\bseeds/", re.I), "cite docs/ge-reference.md §8.N (the articles, restated)"),
    (re.compile(r"\b(?:DESIGN|STYLE)\.md\b"), "state the design here (ARCHITECTURE.md or a docs page)"),
    (re.compile(r"/work/(?:shared|wt|main)\b"), "a path on one machine: cite a file of the repository"),
    (re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]"),
     "text in another language: state it in English and cite docs/ge-reference.md §8.N"),
]
DOCS_PAGE = re.compile(r"(?<![\w./-])docs/([\w-]+\.md)\b")
MD_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)")
BARE_MD = re.compile(r"(?<![\w./-])([\w-]+\.md)\b")
GE_REF_CITE = re.compile(r"ge-reference\.md\)?\s*((?:§\d+(?:\.\d+)?(?:,\s*|\s+and\s+)?)+)")
SECTION = re.compile(r"^#{2,3} (\d+(?:\.\d+)?)[. ]", re.M)
BENCH_SCRIPT = re.compile(r"(?<![\w./-])(bench/[\w]+\.py)\b")


def _files(*suffixes: str) -> list[Path]:
    out = []
    for p in ROOT.rglob("*"):
        if p.suffix in suffixes and p.is_file() and not SKIP_DIRS.intersection(p.relative_to(ROOT).parts):
            out.append(p)
    return sorted(out)


def _lines(path: Path):
    for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        yield f"{path.relative_to(ROOT)}:{i}", line


def test_no_file_points_at_a_document_outside_the_repository():
    found = [f"{where}: {fix}" for path in _files(".py", ".md") if path != THIS
             for where, line in _lines(path) for pattern, fix in OUTSIDE if pattern.search(line)]
    assert not found, "pointers outside the repository:\n" + "\n".join(found)


def test_every_cited_docs_page_exists():
    missing = [f"{where}: docs/{name}" for path in _files(".py", ".md") for where, line in _lines(path)
               for name in DOCS_PAGE.findall(line) if not (ROOT / "docs" / name).is_file()]
    assert not missing, "docs pages cited but absent:\n" + "\n".join(missing)


def test_every_cited_bench_script_exists():
    """A figure's script is named where the figure is quoted: merging or renaming a bench must carry its citers."""
    missing = [f"{where}: {name}" for path in _files(".py", ".md") for where, line in _lines(path)
               for name in BENCH_SCRIPT.findall(line) if not (ROOT / name).is_file()]
    assert not missing, "bench scripts cited but absent:\n" + "\n".join(missing)


def test_every_relative_markdown_link_resolves():
    broken = []
    for path in _files(".md"):
        for where, line in _lines(path):
            for target in MD_LINK.findall(line):
                if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                    continue
                if not (path.parent / target).exists():
                    broken.append(f"{where}: {target}")
    assert not broken, "links to nothing:\n" + "\n".join(broken)


def test_every_markdown_file_named_by_its_bare_name_exists():
    """A bare `name.md` is one of the repository's; GE's documents are named by their path in GE's tree."""
    names = {p.name for p in _files(".md")}
    unknown = [f"{where}: {name}" for path in _files(".py", ".md") if path != THIS
               for where, line in _lines(path) for name in BARE_MD.findall(line) if name not in names]
    assert not unknown, "documents named that the repository does not have:\n" + "\n".join(unknown)


def test_every_cited_ge_reference_section_exists():
    sections = set(SECTION.findall((ROOT / "docs" / "ge-reference.md").read_text(encoding="utf-8")))
    assert {"1.1", "2.10", "3.4", "8.1"} <= sections  # the numbering code cites
    missing = [f"{where}: §{sec}" for path in _files(".py", ".md") for where, line in _lines(path)
               for chain in GE_REF_CITE.findall(line) for sec in re.findall(r"§(\d+(?:\.\d+)?)", chain)
               if sec not in sections]
    assert not missing, "docs/ge-reference.md sections cited but absent:\n" + "\n".join(missing)


def test_every_docs_page_is_linked_from_somewhere():
    """A page nobody links to is a page nobody finds: README, ARCHITECTURE or another page names it."""
    text = {p: p.read_text(encoding="utf-8") for p in _files(".md")}
    orphans = [p.name for p in sorted((ROOT / "docs").glob("*.md"))
               if not any(p.name in t for q, t in text.items() if q != p)]
    assert not orphans, "docs pages no other page links to: " + ", ".join(orphans)


def test_the_figures_page_heads_every_section_with_its_script():
    """docs/figures.md is generated by bench/figures.py: each section names its command, date, CPU, commit and
    load, and its script exists."""
    import importlib.util
    import sys
    spec = importlib.util.spec_from_file_location("bench_figures", ROOT / "bench" / "figures.py")
    figures = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = figures   # its dataclass resolves annotations through sys.modules
    spec.loader.exec_module(figures)
    problems = figures.check((ROOT / "docs" / "figures.md").read_text(encoding="utf-8"))
    assert not problems, "docs/figures.md:\n" + "\n".join(problems)


# A measured figure: a time (ns, us, ms, s), a speed ratio (1.23x), a rate (GF/s, images/s, tokens/s).
MEASURED = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)? ?(?:ns|us|µs|ms|s)\b(?!/)|(?<![\w.])\d+\.\d+x\b"
                      r"|\b(?:GF|GMAC|images|tokens)/s\b")
# What printed it: a bench script, ge's own measuring commands, a tool or example script, or the figures page.
NAMES_SCRIPT = re.compile(r"bench/[\w/]+\.py|`ge (?:bench|plan|profile)\b|figures\.md|(?:tools|examples)/\w+\.py"
                          r"|by hand, no script")   # or says plainly that none printed it
FENCE = re.compile(r"^```.*?^```[^\n]*$", re.M | re.S)
# Pages that hold figures by design: the generated page, the dated record, GE's rules (GE's own numbers).
FIGURE_PAGES = {"figures.md", "performance-log.md", "ge-reference.md"}


def _paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs, fenced blocks (commands, sample output) left out."""
    return [p for p in re.split(r"\n\s*\n", FENCE.sub("\n\n", text)) if p.strip()]


def test_every_measured_figure_in_the_docs_names_its_script():
    """A figure in docs/ says which script printed it (with its date and CPU beside it), in its paragraph or the
    two before it (a table's heading paragraph); else it points at the figures.md section measuring the same."""
    unnamed = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        if page.name in FIGURE_PAGES:
            continue
        paras = _paragraphs(page.read_text(encoding="utf-8"))
        for i, para in enumerate(paras):
            figure = MEASURED.search(para)
            if figure and not any(NAMES_SCRIPT.search(p) for p in paras[max(0, i - 2):i + 1]):
                unnamed.append(f"docs/{page.name}: {figure.group(0)!r} in: {para.strip()[:100]}...")
    assert not unnamed, "figures without the script that printed them:\n" + "\n".join(unnamed)
